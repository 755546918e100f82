"""What every list picker over the chat shares: Enter picks an option's id, Esc cancels."""

from __future__ import annotations

from textual import events
from textual.screen import ModalScreen
from textual.widgets import OptionList


class PickerScreen(ModalScreen[str | None]):
    """A modal with one `OptionList`; it is dismissed with the picked option's id, or None."""

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            self.dismiss(None)

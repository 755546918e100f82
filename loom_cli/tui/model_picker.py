"""/model: the known models to pick from, and the check of a typed model name."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from loom_engine.providers.models import ModelInfo, known_models, lookup

from .picker import PickerScreen

# A model id: letters, digits and . _ - : / @ (routers prefix a vendor, Bedrock uses ':'),
# starting with a letter or digit, with at least one letter. No spaces.
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$")


def model_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a model id, or None when it looks like one."""
    if not name:
        return "no model name given"
    if any(ch.isspace() for ch in name):
        return f"{name!r} is not a model name (model names have no spaces)"
    if not _MODEL_ID.match(name) or not any(ch.isalpha() for ch in name):
        return f"{name!r} is not a model name (letters, digits and . _ - : / @ only)"
    return None


def models_for(provider: str, current: str) -> list[ModelInfo]:
    """The catalog's models of ``provider``, else of the current model's vendor, else all."""
    if provider not in {m.provider for m in known_models()}:
        provider = lookup(current).provider  # a local or scripted provider: go by the model
    models = [m for m in known_models() if m.provider == provider]
    return models or list(known_models())


def _price(value: float) -> str:
    return f"${value:g}"


def model_label(info: ModelInfo, current: str, width: int) -> Text:
    """One short line (it must fit 50 columns): name, context window, $ in / out per Mtok."""
    marker = "● " if info.name == lookup(current).name and lookup(current).known else "  "
    text = Text(marker, no_wrap=True, overflow="ellipsis")
    text.append(f"{info.name:<{width}}", style="bold")
    window = f"{info.context_window // 1000}k" if info.context_window < 1_000_000 else \
        f"{info.context_window / 1_000_000:.1f}M"
    text.append(f"  {window:>5}", style="dim")
    text.append(f"  {_price(info.input_price)} / {_price(info.output_price)}", style="dim")
    return text


class ModelPicker(PickerScreen):
    """Enter picks the highlighted model, Esc leaves the model as it is."""

    DEFAULT_CSS = """
    ModelPicker {
        align: center middle;
    }
    ModelPicker > Vertical {
        width: 90%;
        max-width: 90;
        height: auto;
        max-height: 80%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    ModelPicker OptionList {
        height: auto;
        max-height: 20;
    }
    """

    def __init__(self, models: Sequence[ModelInfo], current: str) -> None:
        super().__init__()
        self.models = list(models)
        self.current = current

    def compose(self) -> ComposeResult:
        width = max((len(m.name) for m in self.models), default=10)
        with Vertical():
            yield Static(Text(f"Switch model (now {self.current})", style="bold"))
            yield Static(Text(f"  {'model':<{width}}  context  $ per Mtok in / out", style="dim"))
            yield OptionList(*[Option(model_label(m, self.current, width), id=m.name) for m in self.models],
                             id="models")
            yield Static(Text("Enter picks · Esc cancels · others: /model NAME", style="dim"))

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        current = lookup(self.current)
        for index, info in enumerate(self.models):
            if current.known and info.name == current.name:
                options.highlighted = index
        options.focus()

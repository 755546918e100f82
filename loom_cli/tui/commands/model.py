"""/model: show, pick or switch the model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...slash_commands import ParsedCommand, SlashCommand

if TYPE_CHECKING:
    from ..chat_host import ChatHost


def provider_of(host: ChatHost) -> str:
    return host.agent.config.provider if host.agent is not None else ""


def model(host: ChatHost, command: ParsedCommand) -> None:
    """/model alone opens the picker; /model NAME switches, warning when NAME is not known."""
    from ..model_picker import ModelPicker, model_name_problem, models_for

    name = command.arg
    if host.busy:
        host.output(f"model: {host.model} · wait for the current run to end (or press Esc) before switching")
        return
    if not name:
        def picked(chosen: str | None) -> None:
            if chosen == host.model:
                host.output(f"model: {host.model} (unchanged)")
            elif chosen and not host.busy:
                switch_model(host, chosen)

        host.push_screen(ModelPicker(models_for(provider_of(host), host.model), host.model), callback=picked)
        return
    problem = model_name_problem(name)
    if problem is not None:
        host.output(f"{problem}; the model stays {host.model}")
        return
    switch_model(host, name)


def switch_model(host: ChatHost, name: str) -> None:
    from loom_engine.providers.models import lookup

    host.switch_model(name)
    host.output(f"model switched to {host.model}")
    info = lookup(name)
    provider = provider_of(host)
    if not info.known:
        host.transcript.add_notice(
            f"⚠ {name} is not a model Loom knows (no price or context size); if the provider does not"
            " have it, the next request says so", "warning")
    elif provider in ("anthropic", "openai") and info.provider != provider:
        host.transcript.add_notice(
            f"⚠ {name} is an {info.provider} model and this session talks to {provider};"
            " the next request will likely fail", "warning")


MODEL = SlashCommand("model", "show or switch the model  [name]", model, usage="/model [name]", max_words=1)

"""Where the warm server's socket may live, and which build a server serves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loom_cli.warm import place


def _tree(root: Path) -> None:
    (root / "loom_cli").mkdir(parents=True)
    (root / "loom_cli" / "main.py").write_text("print('one')\n")
    (root / "loom_engine" / "__pycache__").mkdir(parents=True)


def test_an_edited_file_changes_the_fingerprint(tmp_path: Path) -> None:
    _tree(tmp_path)
    before = place.fingerprint(str(tmp_path), [])
    assert place.fingerprint(str(tmp_path), []) == before
    os.utime(tmp_path / "loom_cli" / "main.py", ns=(1, 1))
    assert place.fingerprint(str(tmp_path), []) != before


def test_compiled_files_do_not_change_it_but_an_upgrade_does(tmp_path: Path) -> None:
    _tree(tmp_path)
    site = tmp_path / "site"
    (site / "anthropic-1.0.dist-info").mkdir(parents=True)
    before = place.fingerprint(str(tmp_path), [str(site)])
    (tmp_path / "loom_engine" / "__pycache__" / "x.pyc").write_bytes(b"")
    (site / "__pycache__").mkdir()
    assert place.fingerprint(str(tmp_path), [str(site)]) == before
    (site / "anthropic-1.0.dist-info").rename(site / "anthropic-1.1.dist-info")
    assert place.fingerprint(str(tmp_path), [str(site)]) != before


def test_the_socket_name_names_the_python_the_confinement_and_the_build() -> None:
    name = place.socket_name("/usr/bin/python3", "net:[1]", "0123456789abcdef")
    assert name.startswith(place.executable_prefix("/usr/bin/python3", "net:[1]"))
    assert name.endswith("-0123456789abcdef.sock")
    assert place.socket_name("/other/python3", "net:[1]", "0123456789abcdef") != name
    assert place.socket_name("/usr/bin/python3", "net:[2]", "0123456789abcdef") != name


# One line: what the process reads of its own confinement, its lines joined with "|".
CONFINEMENT_OF_ITSELF = "from loom_cli.warm import place; print(str(place.confinement()).replace(chr(10), '|'))"


def _one_line(confined: str | None) -> str:
    return str(confined).replace("\n", "|")


def test_a_child_is_confined_as_its_parent_until_it_takes_on_more(tmp_path: Path) -> None:
    """What a process reads of itself is what another reads of it from /proc; a child with
    no new privileges (as Landlock and sandboxes set) is confined otherwise."""
    own = place.confinement()
    assert own is not None and "NoNewPrivs:\t0" in own and "net:[" in own
    plain = subprocess.run([sys.executable, "-c", CONFINEMENT_OF_ITSELF], capture_output=True, text=True, timeout=60)
    assert plain.stdout.strip() == _one_line(own)
    held = subprocess.Popen(["setpriv", "--no-new-privs", sys.executable, "-c",
                             f"{CONFINEMENT_OF_ITSELF}; import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert held.stdout is not None
    said = held.stdout.readline().strip()
    read_from_outside = _one_line(place.confinement(held.pid))
    held.communicate("")
    assert said == read_from_outside != _one_line(own)
    assert "NoNewPrivs:\t1" in said
    assert place.confinement(0) is None  # a pid not seen here (a client in another pid namespace)


def test_the_runtime_folder_is_preferred_and_made_private(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    folder = place.socket_folder({"XDG_RUNTIME_DIR": str(runtime), "HOME": str(tmp_path)}, create=True)
    assert folder == str(runtime / "loom")
    assert os.stat(folder).st_mode & 0o777 == 0o700


def test_a_loose_runtime_folder_falls_back_to_the_cache(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir()
    os.chmod(runtime, 0o755)
    folder = place.socket_folder({"XDG_RUNTIME_DIR": str(runtime), "HOME": str(tmp_path)}, create=True)
    assert folder == str(tmp_path / ".cache" / "loom" / "warm")


@pytest.mark.parametrize("mode", [0o750, 0o705, 0o777])
def test_a_socket_folder_open_to_others_is_refused(tmp_path: Path, mode: int) -> None:
    (tmp_path / ".cache" / "loom" / "warm").mkdir(parents=True)
    os.chmod(tmp_path / ".cache" / "loom" / "warm", mode)
    assert place.socket_folder({"HOME": str(tmp_path)}, create=True) is None


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder another user's needs root")
def test_a_socket_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / ".cache" / "loom" / "warm"
    folder.mkdir(parents=True, mode=0o700)
    os.chown(folder, 12345, 12345)
    assert place.socket_folder({"HOME": str(tmp_path)}, create=True) is None


def test_a_symlinked_socket_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / ".cache" / "loom").mkdir(parents=True)
    (tmp_path / ".cache" / "loom" / "warm").symlink_to(elsewhere)
    assert place.socket_folder({"HOME": str(tmp_path)}, create=True) is None


def test_loom_warm_0_and_the_user_config_turn_it_off(tmp_path: Path) -> None:
    assert place.choose({"LOOM_WARM": "0", "LOOM_CONFIG_DIR": str(tmp_path)}).enabled is False
    assert place.choose({"LOOM_WARM": "off", "LOOM_CONFIG_DIR": str(tmp_path)}).enabled is False
    assert place.choose({"LOOM_CONFIG_DIR": str(tmp_path)}) == place.WarmChoice(True, place.DEFAULT_IDLE_S)
    (tmp_path / "config.toml").write_text("[warm]\nidle_minutes = 2\n")
    assert place.choose({"LOOM_CONFIG_DIR": str(tmp_path)}) == place.WarmChoice(True, 120.0)
    (tmp_path / "config.toml").write_text("[warm]\nenabled = false\n")
    assert place.choose({"LOOM_CONFIG_DIR": str(tmp_path)}).enabled is False

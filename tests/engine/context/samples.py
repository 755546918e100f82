"""Fixed texts with their cl100k_base token counts (measured with tiktoken 0.14 once).

The estimate is tested against these counts, so a change that breaks its calibration
fails a test even on a machine without tiktoken's tables.
"""

PYTHON = '''\
class ToolRegistry:
    """Tools by name, in the order the model sees them."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self._tools[tool.name] = tool

    def restricted(self, names: Iterable[str]) -> "ToolRegistry":
        wanted = set(names)
        return ToolRegistry([t for n, t in self._tools.items() if n in wanted])

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool_spec(t) for t in self._tools.values())
'''

PROSE = '''\
Long real sessions are where coding assistants fail: the window fills, the cache stops
hitting, and a compaction loses the thread or corrupts the transcript. The assistant
should keep what matters - the user's intent, the decisions taken and the errors
already solved - and let go of bulky tool output that can be read again. When the
history is summarised, every tool call must stay together with its result, or the
next request is rejected by the provider.
'''

JSON = '''\
{"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
 "content": [{"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9",
 "name": "read_file", "input": {"path": "src/app/models/user.py", "offset": 120,
 "limit": 80}}], "stop_reason": "tool_use", "usage": {"input_tokens": 2095,
 "output_tokens": 503, "cache_read_input_tokens": 18234}}
'''

SHELL = '''\
total 48
drwxr-xr-x  7 dev dev 4096 Mar  3 10:12 .
drwxr-xr-x 19 dev dev 4096 Mar  1 08:40 ..
-rw-r--r--  1 dev dev  231 Mar  3 10:12 .gitignore
-rw-r--r--  1 dev dev 1067 Feb 28 17:55 LICENSE
-rw-r--r--  1 dev dev 2874 Mar  3 10:11 README.md
drwxr-xr-x  4 dev dev 4096 Mar  2 21:03 loom_engine
-rw-r--r--  1 dev dev 1530 Mar  3 09:58 pyproject.toml
drwxr-xr-x  6 dev dev 4096 Mar  3 10:01 tests
FAILED tests/engine/test_turn.py::test_abort_mid_stream - AssertionError: assert 2 == 1
===== 1 failed, 212 passed, 3 skipped in 14.27s =====
'''

INTERNATIONAL = "Größenänderung für Dateien. Это проверка количества токенов. 这是一个用于测试的中文句子。"

SAMPLES = {"python": PYTHON, "prose": PROSE, "json": JSON, "shell": SHELL, "international": INTERNATIONAL}

CL100K_TOKENS = {"python": 157, "prose": 98, "json": 135, "shell": 241, "international": 36}

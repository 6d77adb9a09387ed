"""Reading the JSON files of a checkpoint directory (config.json, tokenizer.json, ...)."""
import json
import pathlib
from typing import Optional, Type


def read_json_object(path: pathlib.Path, error: Type[Exception], required: bool,
                     missing_hint: str = "") -> Optional[dict]:
    """The JSON object in `path` (UTF-8), or None when the file is absent and not `required`.

    Raises:
      `error` (the caller's ValueError subclass) naming `path`: absent and required (the
      message ends with `missing_hint`), unreadable, not UTF-8, not JSON, not an object, or
      holding a lone surrogate escape (text no UTF-8 file can hold).
    """
    if not path.is_file():
        if required:
            raise error(f"{path}: not found{missing_hint}")
        return None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise error(f"{path}: cannot read JSON (UTF-8): {e}") from e
    try:  # a \ud800-style escape of a lone surrogate parses, but no UTF-8 file can hold it
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        bad = e.object[max(e.start - 20, 0):e.end + 20]
        raise error(f"{path}: a string holds a lone UTF-16 surrogate (a \\u escape in "
                    f"D800-DFFF without its pair), which is not Unicode text: near {bad!r}; "
                    f"fix the file") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data

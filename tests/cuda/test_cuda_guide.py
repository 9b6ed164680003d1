"""docs/09-cuda.md's snippets with a GPU present (simulated CuPy here, the real one in
scripts/gpu-check): their `if torch.cuda.is_available():` branches run too."""
import pathlib
import re

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "09-cuda.md"


def test_the_cuda_guide_runs_with_a_gpu(quiet_gc):
    import glasstorch as torch
    assert torch.cuda.is_available()
    text = GUIDE.read_text()
    namespace: dict = {}
    for match in re.finditer(r"```python\n(.*?)```", text, re.S):
        code = "\n" * text.count("\n", 0, match.start(1)) + match.group(1)
        exec(compile(code, str(GUIDE), "exec"), namespace)
    assert namespace["device"].type == "cuda"
    assert namespace["snapshot"]["segments"]

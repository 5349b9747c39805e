"""``make dist-check``: the built distributions (``dist/``) installed as a user installs them, and used.

Everything runs in a temporary folder, away from the checkout: no ``PYTHONPATH``, the working
directory elsewhere, so nothing is imported from the sources (checked: ``retrysafe.__file__`` is in the
new virtualenv). The steps:

1. A Lambda deployment package: ``pip install --target`` the retrysafe wheel with its requirements.
   It holds ``retrysafe`` and its requirements and nothing of the constructs or the sandbox.
2. A fresh virtualenv with ``retrysafe[cdk,sandbox]`` from the three wheels, and pytest (the
   requirements at the versions of the project's own virtualenv). From there, with the user's files
   of ``distcheck/user``:
   a. ``call_on_moto.py``: the decorated handler called on moto, then replayed, and its record inspected
      with the ``retrysafe`` console script's entry point; the script itself runs (``retrysafe --help``);
   b. ``test_greetings.py``: the pytest plugin's failure drills (entry point ``pytest11``) on it;
   c. ``app.py``: a CDK app with the constructs, synthesized with ``app.synth()``; the runtime layer it
      builds holds exactly the wheel's runtime files (all of ``retrysafe/`` but the test plugin
      ``retrysafe/testing/``), and the function's own code only the user's handler folder;
   d. the sandbox (``python -m retrysafe_sandbox serve``) started on that app, one request served and
      replayed, stopped with SIGINT.

Usage: ``python distcheck/run.py dist`` (the folder with the wheels). A few minutes with a warm pip cache.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

USER = Path(__file__).resolve().parent / "user"
#: What the drills' user test needs beside the wheels (the plugin's own requirements: docs/drills.md).
TEST_REQUIREMENTS = ("pytest>=8", "moto[dynamodb]>=5.2.5,<6")
STARTED = time.monotonic()
#: aws-cdk-lib alone is some 400 MB unpacked: on a loaded machine its install takes minutes. No
#: bytecode is compiled at install (``--no-compile``): Python compiles what it imports, on first use.
INSTALL_TIMEOUT = 1800
#: Where the three import packages come from, and the versions: ``__version__`` and each distribution's.
WHERE = """
import importlib.metadata, retrysafe, retrysafe_cdk, retrysafe_sandbox
print(retrysafe.__file__, retrysafe_cdk.__file__, retrysafe_sandbox.__file__)
print(retrysafe.__version__, *(importlib.metadata.version(d) for d in ("retrysafe", "retrysafe-cdk", "retrysafe-sandbox")))
"""


def step(message: str) -> None:
    """One line of progress, with the seconds since the start."""
    print(f"dist-check [{time.monotonic() - STARTED:5.0f} s] {message}", flush=True)


def user_environment() -> dict[str, str]:
    """The environment of a user's shell: this one without PYTHONPATH (or anything else pointing at sources)."""
    return {name: value for name, value in os.environ.items()
            if name not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}


def run(command: list[str], cwd: Path, timeout: float = 600) -> str:
    """``command`` in ``cwd`` as a user runs it; its output, or exit 1 with the output on failure."""
    done = subprocess.run(command, cwd=cwd, env=user_environment(), capture_output=True, text=True,
                          timeout=timeout, check=False)
    if done.returncode != 0:
        print(done.stdout, done.stderr, sep="\n", file=sys.stderr)
        raise SystemExit(f"dist-check: {' '.join(command[:4])} ... exited {done.returncode}")
    return done.stdout


def wheels(dist: Path) -> dict[str, Path]:
    """The one wheel of each distribution, by distribution name."""
    found = {path.name.split("-")[0].replace("_", "-"): path for path in dist.glob("*.whl")}
    if sorted(found) != ["retrysafe", "retrysafe-cdk", "retrysafe-sandbox"] or len(list(dist.glob("*.whl"))) != 3:
        raise SystemExit(f"dist-check: expected one wheel of each distribution in {dist}, found "
                         f"{sorted(p.name for p in dist.glob('*.whl'))} (make dist)")
    return found


def runtime_files(wheel: Path) -> set[str]:
    """The files of ``retrysafe/`` in the runtime wheel that a Lambda runs: all but the test plugin."""
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist()
                if name.startswith("retrysafe/") and not name.startswith("retrysafe/testing/")}


def top_level(folder: Path) -> set[str]:
    """The importable names an installed folder holds (packages and modules, no metadata, no scripts)."""
    return {path.name.removesuffix(".py") for path in folder.iterdir()
            if not path.name.endswith((".dist-info", ".pth")) and path.name not in ("bin", "__pycache__")
            and (path.is_dir() or path.suffix == ".py")}


def lambda_package(work: Path, runtime_wheel: Path) -> None:
    """Step 1: the deployment package a user builds for a function, from the runtime wheel."""
    package = work / "lambda-package"
    run([sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(package),
         str(runtime_wheel)], work, timeout=INSTALL_TIMEOUT)
    names = top_level(package)
    if "retrysafe" not in names or names & {"retrysafe_cdk", "retrysafe_sandbox", "aws_cdk", "moto"}:
        raise SystemExit(f"dist-check: a function's package holds {sorted(names)}")
    size = sum(path.stat().st_size for path in package.rglob("*") if path.is_file())
    step(f"a function's deployment package holds {', '.join(sorted(names))} ({size / 1e6:.1f} MB)")


def synthesize(work: Path, python: Path, runtime_wheel: Path) -> Path:
    """Step 2c: the user's app synthesized; its layer compared with the wheel. The assembly folder."""
    run([str(python), "app.py"], work)
    assembly = work / "cdk.out"
    layers = [path.parent for path in assembly.glob("asset.*/python/retrysafe")]
    if len(layers) != 1:
        raise SystemExit(f"dist-check: expected one runtime layer asset in {assembly}, found {layers}")
    layer = layers[0]
    shipped = {path.relative_to(layer).as_posix() for path in (layer / "retrysafe").rglob("*") if path.is_file()}
    expected = runtime_files(runtime_wheel)
    if shipped != expected:
        raise SystemExit(f"dist-check: the layer's retrysafe differs from the wheel's runtime files: only in the "
                         f"layer {sorted(shipped - expected)}, only in the wheel {sorted(expected - shipped)}")
    handler_assets = [path for path in assembly.glob("asset.*") if (path / "greetings.py").exists()]
    if len(handler_assets) != 1 or {p.name for p in handler_assets[0].iterdir()} != {"greetings.py"}:
        raise SystemExit(f"dist-check: the function's code asset is not just the handler: {handler_assets}")
    size = sum(path.stat().st_size for path in layer.rglob("*") if path.is_file())
    step(f"synthesized; the layer holds {', '.join(sorted(top_level(layer)))} ({size / 1e6:.1f} MB), "
         f"its retrysafe/ = the wheel's {len(expected)} runtime files; the function's code: greetings.py")
    return assembly


def sandbox(work: Path, python: Path) -> None:
    """Step 2d: the sandbox serving the synthesized app, one request and its replay, then SIGINT."""
    process = subprocess.Popen([str(python), "-m", "retrysafe_sandbox", "serve", "--assembly", "cdk.out",
                                "--port", "0", "--aws-port", "0", "--tenant", "dist-check"],
                               cwd=work, env=user_environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    assert process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stdout:
            lines.put(line)

    # A thread reads the output: select() on a text pipe misses the lines already in its buffer.
    stdout = process.stdout
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    output: list[str] = []
    url = None
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and process.poll() is None:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            output.append(line)
            url = url or next(iter(re.findall(r"^API: (\S+)", line)), None)
            if line.startswith("Ctrl-C to stop."):
                break
        if url is None or not output or not output[-1].startswith("Ctrl-C"):
            raise SystemExit("dist-check: the sandbox did not start:\n" + "".join(output))
        step(f"sandbox serving {url}")
        print(run([str(python), str(work / "request.py"), url, "dist-check", "sandbox"], work), end="")
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    reader.join(timeout=30)
    while not lines.empty():
        output.append(lines.get_nowait())
    if process.returncode != 0:
        raise SystemExit(f"dist-check: the sandbox exited {process.returncode}:\n" + "".join(output))
    step("sandbox stopped (SIGINT), exit status 0")


def main(dist: Path) -> None:
    """All the steps; exits non-zero at the first that fails."""
    found = wheels(dist.resolve())
    with tempfile.TemporaryDirectory(prefix="retrysafe-dist-check-") as temporary:
        root = Path(temporary)
        work = root / "work"
        shutil.copytree(USER, work, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        lambda_package(root, found["retrysafe"])

        run([sys.executable, "-m", "venv", str(root / "venv")], root)
        python = root / "venv" / "bin" / "python"
        # The requirements at the versions this project's own virtualenv has: what it tests against, and
        # what pip's cache holds after `make install` (a user's resolver may pick newer ones in the ranges).
        constraints = root / "constraints.txt"
        pinned = run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], root).splitlines()
        constraints.write_text("\n".join(line for line in pinned if "==" in line and not line.startswith("retrysafe")))
        run([str(python), "-m", "pip", "install", "--quiet", "--no-compile", "--constraint", str(constraints),
             f"{found['retrysafe']}[cdk,sandbox]", str(found["retrysafe-cdk"]), str(found["retrysafe-sandbox"]),
             *TEST_REQUIREMENTS], root, timeout=INSTALL_TIMEOUT)
        where = run([str(python), "-c", WHERE], work).split("\n")
        venv = str(root / "venv")
        if not all(path.startswith(venv) for path in where[0].split()) or len(set(where[1].split())) != 1:
            raise SystemExit(f"dist-check: imported from {where[0]}, versions {where[1]}")
        step(f"installed retrysafe[cdk,sandbox] {where[1].split()[0]} into a fresh virtualenv")

        print(run([str(python), "call_on_moto.py"], work), end="")
        usage = run([str(root / "venv" / "bin" / "retrysafe"), "--help"], work)
        if not usage.startswith("usage: retrysafe "):
            raise SystemExit(f"dist-check: retrysafe --help printed {usage[:200]!r}")
        step("the retrysafe console script runs (retrysafe --help)")
        drills = run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_greetings.py"], work)
        step(f"the pytest plugin's drills on the user's test: {drills.strip().splitlines()[-1]}")
        synthesize(work, python, found["retrysafe"])
        sandbox(work, python)
    step("passed")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "dist"))

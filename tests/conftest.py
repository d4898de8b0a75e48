import copy
import os
import signal
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

# A suite started in the background (`cmd &` in a script) inherits SIGINT ignored, and an
# ignored signal stays ignored across exec. The tests of Ctrl-C need it as an interactive run
# has it, in this process and in the commands they start.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# SB3 makes a folder /tmp/SB3-<time> for every model built without a log folder of its own
# (the tests' small MaskablePPO runs); the suite keeps them in its own temporary folder.
@pytest.fixture(autouse=True, scope="session")
def _sb3_log_folder(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3")))
        yield


def made_once(tmp_path_factory, name: str, make) -> Path:
    """A copy, in a temporary folder of this worker's own, of the folder that ``make(path)``
    fills at ``path``: made once for the whole suite, however many xdist workers need it (the
    others wait for it), and each worker's tests may change their copy."""
    import fcntl
    import shutil

    base = tmp_path_factory.getbasetemp()
    # a worker's base folder lies in the one its pytest run shares with its other workers
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    made = shared / f"{name}-made"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.exists():
            part = shared / f"{name}-part"
            shutil.rmtree(part, ignore_errors=True)
            make(part)
            part.rename(made)
    mine = tmp_path_factory.mktemp(name) / name
    shutil.copytree(made, mine)
    return mine


TRAIN_EXTRA = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "onnx")


def pytest_collection_modifyitems(config, items):
    """A core install (``pip install -e .``, no training extra) skips the tests marked
    ``train_extra`` instead of failing them, and tests the engine, the environments, the bots
    and the tournaments all the same."""
    import importlib.util

    missing = [name for name in TRAIN_EXTRA if importlib.util.find_spec(name) is None]
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"needs the training extra ({', '.join(missing)} not "
                                   "installed): pip install -e '.[train]'")
    for item in items:
        if item.get_closest_marker("train_extra"):
            item.add_marker(skip)


settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def interrupt_while_recording(argv: list[str], record, sig=None,
                              **popen) -> tuple[int, str, str]:
    """Runs a command that writes ``record``, sends it ``sig`` (Ctrl-C's SIGINT unless given)
    once it has written some matches, and returns its exit status, stdout and stderr."""
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **popen)
    def written() -> int:
        return sum(p.stat().st_size for p in record.parent.glob(record.name + ".*.part"))

    deadline = time.time() + 60
    while written() <= 20000:
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, f"{argv[1]} never got going"
        time.sleep(0.05)
    proc.send_signal(sig or signal.SIGINT)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # say what it was doing, not only that it hung
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                status = [line.strip() for line in f if line.startswith(("State", "Sig"))]
        except OSError:
            status = []
        proc.kill()
        stdout, stderr = proc.communicate()
        raise AssertionError(f"{argv[1]} still ran 120 s after {sig or 'Ctrl-C'} ({status}); "
                             f"stdout {stdout[-1000:]!r}, stderr {stderr[-3000:]!r}") from None
    return proc.returncode, stdout, stderr


def cli_in_process(*args, cwd=ROOT, input: str = ""):
    """``arschloch ARGS`` run by this process's ``main`` from ``cwd``, reading ``input``: its
    exit status, stdout and stderr as a ``CompletedProcess``. For commands that neither train
    nor need a process of their own: a subprocess pays about 4 s importing torch each time,
    most of an export's or a refusal's test."""
    import contextlib
    import io
    import subprocess
    import sys

    from arschloch_env.cli import main

    argv = list(map(str, args))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        stack.enter_context(pytest.MonkeyPatch.context()).setattr(sys, "stdin",
                                                                   io.StringIO(input))
        stack.enter_context(contextlib.chdir(cwd))
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["arschloch", *argv], code, out.getvalue(),
                                       err.getvalue())


def calls_of(monkeypatch, owner, name: str) -> list[tuple]:
    """Wraps ``owner.name`` (a module's function or a class's method) so that every call's
    positional arguments are recorded in the returned list, and the call goes through."""
    real = getattr(owner, name)
    calls: list[tuple] = []

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls


def run_python(code: str, timeout: int = 120):
    """``code`` run by this interpreter in a process of its own (what a script sees at exit)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout)


def event_files(run) -> set:
    """Every TensorBoard event file under the run directory ``run``'s ``tb``."""
    return set((run / "tb").rglob("events.out.tfevents.*"))


def logged_steps(files, tag: str) -> list[int]:
    """The steps at which the event ``files`` logged the scalar ``tag``."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    return [event.step for path in sorted(files) for event in EventFileLoader(str(path)).Load()
            if any(value.tag == tag for value in event.summary.value)]


def snapshot(game) -> dict:
    """Everything an engine ``Game`` holds, deep-copied (its random stream as its state):
    equal before and after a call exactly when the call changed nothing."""
    out = {k: copy.deepcopy(v) for k, v in vars(game).items()
           if k not in ("rng", "_deals", "codec", "rules")}
    out["rng"] = copy.deepcopy(game.rng.bit_generator.state)
    return out

"""Command line: parses the arguments, calls the stage that does the work, prints, and exits.

The work itself is done elsewhere (``harness.run`` runs grids, ``harness.present`` draws, ``harness.plx``
speaks to Polyaxon), and each of those is imported only by the command that needs it, so that
``harness list`` starts without pandas, matplotlib or Polyaxon.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError, OutlivesReader, RunFailed, cut_keeping_place, no_room
from harness.limits import (
    CASE_TIMEOUT_MAX_S,
    COMPACT_ABOVE,
    COUNT_MAX,
    DEFAULT_CASE_TIMEOUT_S,
    EXPLORE_SEED_COUNT_MAX,
    SEED_COUNT_MAX,
)
from harness.plx import DEFAULT_PROJECT, TRACKING_MODES
from harness.seeds import DEFAULT_SEEDS, SEED_MAX

if TYPE_CHECKING:
    from collections import Counter

    from harness.present.analysis import Reading
    from harness.run import CellJob, CellResult, GridSummary, Plan
    from harness.run.folder import Claim, Request
    from harness.run.grid import Progress

__all__ = ["main"]

_HELP = """Run recovery policies against scenarios of lost replies, and judge each case from the evidence.

Exit statuses:
  0  every case ran and was judged (whatever the outcomes: an incorrect policy is a finding, not an error)
  1  at least one case ended in harness_error (its reproduce command is printed: a harness failure, a case
     over --case-timeout, a worker that died), or the run's folder could not be written (resume it once fixed)
  2  bad usage or input (unknown policy or scenario, malformed scenario file or polyaxonfile, an --out in use
     by another run, a --resume whose inputs changed); nothing was written
  3  the cases are complete on disk, but Polyaxon tracking or the push to the server failed (the message says
     how to send the runs later)
  4  everything is written, but a fault or operator event a scenario declares fired in no case (the scenario
     tested nothing it claims to; the message names the scenario and the fault or event); --unfired note
     says it as a note instead, and the status is what it would be had it fired
  130 interrupted (Ctrl-C, SIGTERM): a run's folder is resumable with 'harness run --resume DIR', an
     exploration's with 'harness explore --resume DIR' (a check is not: run it again)
  141 the program reading the output went away (as in 'harness list | true')
explore: 0 no finding, 1 findings (each a runnable file) or harness errors on some schedules (a case over
  --case-timeout or a worker that died stops that policy's exploration of that template), 2 bad usage or
  input, 3 Polyaxon tracking failed, 4 a declared fault or operator event fired in no case of the template
  as written, for the policies explored (--unfired note: said, not a status).
replay: 0 the case came out the same as recorded, 1 it did not, 2 bad input.
check: 0 every case is correct or escalated, 1 some case is not (each printed with its reproduce command and
  repro file), 2 bad usage or input.
push: 0 every offline run is on the server (sent now, or there already), 2 bad input, 3 some could not be sent
  (given again, it sends the rest).
"""

EXIT_OK, EXIT_HARNESS_ERROR, EXIT_USAGE, EXIT_TRACKING, EXIT_COVERAGE = 0, 1, 2, 3, 4
#: Ctrl-C or SIGTERM: the run stopped; its folder can be resumed.
EXIT_INTERRUPTED = 130
#: The output's reader closed the pipe: the status a program killed by SIGPIPE has in a shell.
EXIT_BROKEN_PIPE = 141
#: ``harness check``: some case is neither correct nor escalated (the policy fails the gate).
EXIT_UNSAFE = 1
#: ``harness explore`` prints a replay command for this many findings; explore.json lists them all.
FINDINGS_SHOWN = 10


class _Parser(argparse.ArgumentParser):
    """One-line usage errors, and no abbreviated options: ``check --seed 5`` would otherwise quietly be
    ``--seed-count 5`` (every reproduce command says ``--seed N`` for one seed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """As argparse's, but words left over are refused by the command they were given to, so the fix names
        that command's help."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            commands = next((a.choices for a in self._actions if isinstance(a, argparse._SubParsersAction)), {})
            command = commands.get(str(getattr(parsed, "command", "")), self)
            command.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed

    def error(self, message: str) -> None:  # type: ignore[override]
        command = " ".join(self.prog.split()[1:])
        where = f"python -m harness {command} --help" if command else "python -m harness --help"
        self.exit(EXIT_USAGE, f"harness: {_line(message)}; fix: see '{where}'\n")


def _whole(low: int, high: int, what: str) -> Callable[[str], int]:
    """An argparse type: a whole number in ``low..high``, refused in one line otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} '{text}' is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} {value} is outside {low}..{high}")
        return value

    return parse


def _path(text: str) -> Path:
    """An argparse type: a path, refused when empty (``Path("")`` would quietly be the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give a file or folder name")
    return Path(text)


_seed = _whole(0, SEED_MAX, "seed")
_positive = _whole(1, COUNT_MAX, "count")
_port = _whole(1, 65535, "port")


def _seconds(text: str) -> float:
    """An argparse type: seconds, 0 (none) or more, at most a day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seconds '{text}' is not a number") from None
    if not 0 <= value <= CASE_TIMEOUT_MAX_S:
        raise argparse.ArgumentTypeError(f"seconds {text} is outside 0..{CASE_TIMEOUT_MAX_S:g}")
    return value


def _shard(text: str) -> tuple[int, int]:
    """An argparse type: ``I/N`` with 0 <= I < N."""
    index, sep, count = text.partition("/")
    if not sep or not index.isdigit() or not count.isdigit() or not 0 <= int(index) < int(count) <= COUNT_MAX:
        raise argparse.ArgumentTypeError(f"shard '{text}' is not I/N with 0 <= I < N")
    return int(index), int(count)


def _attached(words: list[str]) -> list[str]:
    """``--shard -1/2`` as ``--shard=-1/2``: argparse takes a value that starts with '-' (and is not a number) for
    an option, and says only that --shard expected an argument; attached, the value reaches ``_shard``, which
    says what is wrong with it."""
    out: list[str] = []
    for word in words:
        if out and out[-1] == "--shard" and word.startswith("-") and word != "--":
            out[-1] = f"--shard={word}"
        else:
            out.append(word)
    return out


def _parser(defaults: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; ``defaults`` false: one that leaves out every option not given (its namespace
    holds exactly the options on the command line, whatever their values)."""
    parser = _Parser(prog="harness", description=_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    run = sub.add_parser("run", help="run the policy x scenario grid")
    run.add_argument(
        "--policy",
        action="append",
        metavar="NAME|MODULE:ATTR",
        help="a shipped policy or package.module:attr (repeatable; default: the grid file's, or every shipped "
        "policy by name when only --scenario is given)",
    )
    run.add_argument(
        "--scenario",
        action="append",
        metavar="NAME|PATH",
        help="a shipped scenario or a YAML file (repeatable; default: the grid file's, or every shipped scenario "
        "by name when only --policy is given)",
    )
    seeds = run.add_mutually_exclusive_group()
    seeds.add_argument("--seed", action="append", type=_seed, metavar="N", help="a seed (repeatable)")
    seeds.add_argument(
        "--seed-count",
        type=_whole(1, SEED_COUNT_MAX, "seed count"),
        metavar="N",
        help=f"seeds 1..N, N up to {SEED_COUNT_MAX:,} (default: the grid file's seed_count, else {len(DEFAULT_SEEDS)})",
    )
    run.add_argument(
        "--polyaxonfile",
        type=_path,
        metavar="FILE",
        help="expand this Polyaxon grid operation's matrix and run its cells (default: polyaxonfiles/grid.yaml "
        "when neither --policy nor --scenario is given)",
    )
    run.add_argument(
        "--concurrency",
        type=_positive,
        metavar="N",
        help="processes side by side; a cell of many seeds is shared among them (default: the matrix's, else 1); "
        "with --resume, the processes that run what is missing (the cells stay split as the run began)",
    )
    run.add_argument("--out", type=_path, metavar="DIR", help="output folder (default: reports/runs/<run-id>)")
    run.add_argument(
        "--tracking",
        choices=TRACKING_MODES,
        default="offline",
        help="Polyaxon tracking: one run per cell, offline into <out>/polyaxon (default), pushed to the "
        "configured server as well, or none",
    )
    run.add_argument(
        "--project",
        default=DEFAULT_PROJECT,
        metavar="[OWNER/]NAME",
        help=f"Polyaxon project for the runs (default: {DEFAULT_PROJECT})",
    )
    run.add_argument(
        "--records",
        choices=("auto", "full", "compact"),
        default="auto",
        help="full: a recovery.json per case; compact: one gzipped JSON line per case in records-*.jsonl.gz, "
        f"and a recovery.json only for cases that are not correct; auto (default): compact for cells of more "
        f"than {COMPACT_ABOVE:,} seeds",
    )
    run.add_argument(
        "--failing-files",
        type=_whole(0, SEED_COUNT_MAX, "failing files"),
        metavar="N",
        help="with compact records, a recovery.json for at most N of a cell's cases that are not correct (shared "
        "evenly among its pieces; every case stays in the records, and 'harness replay' re-creates any); default: "
        "every one",
    )
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    run.add_argument("--no-report", action="store_true", help="skip report.html, heatmap.png and the timelines")
    _case_timeout(run, "counted as a harness error")
    _unfired(run, "run")
    _force_concurrency(run)
    run.add_argument(
        "--resume",
        type=_path,
        metavar="DIR",
        help="complete a run that was stopped (killed, Ctrl-C, a full disk): only what is missing is run, with the "
        "options it began with; only --no-report, --junit, --quiet and --concurrency (with --force-concurrency) "
        "may be given with it",
    )
    run.add_argument(
        "--junit",
        type=_path,
        metavar="FILE",
        help="also write JUnit XML: one testcase per scenario x seed, a failure per case neither correct nor "
        "escalated (with a repro file under <out>/repro)",
    )
    explore = sub.add_parser(
        "explore", help="explore fault schedules from scenarios, shrink every violation to a minimal runnable file"
    )
    explore.add_argument(
        "--policy", action="append", metavar="NAME|MODULE:ATTR", help="a policy (repeatable; default: all shipped)"
    )
    explore.add_argument(
        "--scenario", action="append", metavar="NAME|PATH", help="a template (repeatable; default: all shipped)"
    )
    explore.add_argument(
        "--depth", type=_whole(1, 3, "depth"), default=2, metavar="K", help="combine up to K added elements (default 2)"
    )
    explore.add_argument(
        "--swarm",
        type=_whole(0, COUNT_MAX, "swarm"),
        default=20,
        metavar="N",
        help="random swarm schedules per template (default 20)",
    )
    explore.add_argument(
        "--seed-count",
        type=_whole(1, EXPLORE_SEED_COUNT_MAX, "seed count"),
        default=1,
        metavar="S",
        help=f"seeds 1..S for every schedule, S up to {EXPLORE_SEED_COUNT_MAX} (default 1)",
    )
    explore.add_argument(
        "--concurrency", type=_positive, default=1, metavar="N", help="processes side by side (default 1)"
    )
    _force_concurrency(explore)
    explore.add_argument(
        "--shard",
        type=_shard,
        default=(0, 1),
        metavar="I/N",
        help="explore only shard I of N of every template's schedules (0-based)",
    )
    explore.add_argument("--out", type=_path, metavar="DIR", help="output folder (default: reports/runs/<run-id>)")
    explore.add_argument(
        "--tracking",
        choices=TRACKING_MODES,
        default="offline",
        help="Polyaxon tracking: one run per (policy, scenario) explored, offline into <out>/polyaxon (default), "
        "pushed to the configured server as well, or none",
    )
    explore.add_argument(
        "--project",
        default=DEFAULT_PROJECT,
        metavar="[OWNER/]NAME",
        help=f"Polyaxon project for the runs (default: {DEFAULT_PROJECT})",
    )
    _case_timeout(explore, "reported as a harness error, and its policy explored no further in that part")
    _unfired(explore, "exploration")
    explore.add_argument(
        "--resume",
        type=_path,
        metavar="DIR",
        help="complete an exploration that was stopped (Ctrl-C, SIGTERM, a full disk): only its parts that are "
        "missing are explored, with the options it began with; only --quiet and --concurrency (with "
        "--force-concurrency) may be given with it",
    )
    explore.add_argument("--quiet", action="store_true", help="no progress lines")
    check = sub.add_parser(
        "check", help="gate one policy: exit 1 unless every case is correct or escalated; JUnit XML, repro files"
    )
    check.add_argument(
        "--policy",
        action="append",
        required=True,
        metavar="NAME|MODULE:ATTR",
        help="the policy to gate: a shipped name or package.module:attr",
    )
    check.add_argument(
        "--scenario", action="append", metavar="NAME|PATH", help="a scenario (repeatable; default: all shipped)"
    )
    check.add_argument(
        "--seed-count",
        type=_positive,
        default=len(DEFAULT_SEEDS),
        metavar="N",
        help=f"seeds 1..N for every scenario, N up to {COUNT_MAX:,} (default {len(DEFAULT_SEEDS)})",
    )
    check.add_argument(
        "--explore",
        action="store_true",
        help="also explore each scenario's schedules (as 'harness explore' at its defaults, at the same seeds)",
    )
    check.add_argument(
        "--baseline",
        metavar="NAME|MODULE:ATTR",
        help="also run this policy on the same cases, and fail each case that passes yet leaves the task "
        "incomplete where the baseline completes it (safe is not done)",
    )
    check.add_argument("--junit", type=_path, metavar="FILE", help="write JUnit XML to FILE")
    check.add_argument(
        "--out", type=_path, metavar="DIR", help="folder for cases and repro files (default: a new temporary folder)"
    )
    check.add_argument(
        "--concurrency", type=_positive, default=1, metavar="N", help="processes side by side (default 1)"
    )
    _force_concurrency(check)
    _case_timeout(check, "a failure of the gate (a harness error)")
    check.add_argument(
        "--maxfail",
        type=_positive,
        metavar="N",
        help="stop once N cases failed (harness errors included), judging what ran; the rest, the baseline and the "
        "exploration are left out (a policy that hangs costs --case-timeout a case)",
    )
    check.add_argument(
        "--quiet", action="store_true", help="no progress lines (every 10 s of a long check, and while exploring)"
    )
    replay = sub.add_parser(
        "replay", help="re-run a recorded case (recovery.json or a finding) and check it is the same"
    )
    replay.add_argument(
        "case",
        type=_path,
        metavar="CASE",
        help="a recovery.json, a compact record (records-*.jsonl.gz#seed-N), or a scenario file with 'reproduces' "
        "(a finding written by explore, a repro file written by check, run --junit or the pytest plugin)",
    )
    report = sub.add_parser("report", help="write report.html for a run folder (tables, heatmap, timelines)")
    report.add_argument(
        "run_dir",
        type=_path,
        metavar="RUN_DIR",
        help="a folder written by 'harness run', or a folder of recovery.json files",
    )
    report.add_argument(
        "--out",
        type=_path,
        metavar="FILE",
        help="write the page to FILE (and heatmap.png beside it) instead of RUN_DIR/report.html; nothing is written "
        "into RUN_DIR (a read-only run folder, say): timelines not drawn there yet are drawn into the page alone",
    )
    listing = sub.add_parser("list", help="show policies, scenarios and fault boundaries")
    listing.add_argument(
        "--scenario",
        action="append",
        metavar="NAME|PATH",
        help="show only this scenario, loaded as a run loads it: a file of yours is checked (repeatable)",
    )
    schema = sub.add_parser("schema", help="print the JSON Schema of recovery.json")
    schema.add_argument("--out", type=_path, metavar="FILE", help="write it to FILE instead")
    push = sub.add_parser(
        "push",
        help="send a folder's offline Polyaxon runs to the server (POLYAXON_HOST), one request at a time, "
        "skipping those it has already: given again after a failure, it sends the rest",
    )
    push.add_argument("run_dir", type=_path, metavar="RUN_DIR", help="a folder written by 'harness run' or 'explore'")
    push.add_argument(
        "--project",
        metavar="[OWNER/]NAME",
        help=f"the project to send them to (default: the run's own, from its manifest; else {DEFAULT_PROJECT}); "
        "created if the server lacks it",
    )
    view = sub.add_parser("view", help="browse a run's Polyaxon runs in the Polyaxon UI (haupt viewer)")
    view.add_argument("run_dir", type=_path, metavar="RUN_DIR", help="a folder written by 'harness run'")
    view.add_argument("--port", type=_port, default=8000, help="port on 127.0.0.1 (default: 8000)")
    if not defaults:
        for command in sub.choices.values():
            for action in command._actions:
                action.default = argparse.SUPPRESS
    return parser


#: What may be given with ``--resume``: everything else comes from the run's manifest. ``--concurrency`` sets only
#: how many processes run the pieces still missing (the pieces stay as the run planned them), and
#: ``--force-concurrency`` goes with it (alone, it would change nothing: it is refused).
_WITH_RESUME = frozenset({"command", "resume", "no_report", "junit", "quiet", "concurrency"})


def _only_with_resume(argv: Sequence[str], allowed: frozenset[str], takes: str) -> list[str]:
    """The options typed (``argv``), once each is one ``--resume`` may be given with (``--force-concurrency``
    only beside ``--concurrency``); else ``UsageError`` naming the others: the rest is what it ``takes``."""
    from harness.run.plan import UsageError

    explicit = list(vars(_parser(defaults=False).parse_args(argv)))  # in the order typed
    allowed = allowed | ({"force_concurrency"} if "concurrency" in explicit else set())
    given = [f"--{name.replace('_', '-')}" for name in explicit if name not in allowed]
    if given:
        raise UsageError(
            f"--resume takes {takes}, not {', '.join(given)}; fix: drop " + ("them" if len(given) > 1 else "it")
        )
    return explicit


def _run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from harness.gate.junit import check_junit_path
    from harness.policy import look_in
    from harness.run.folder import Request, claim
    from harness.run.grid import Ended, RunInterrupted, begin, begun_as, resume_grid
    from harness.run.plan import UsageError

    if args.resume is not None:
        args.resume = args.resume.absolute()  # the resume command it may print runs from any folder
        _only_with_resume(argv, _WITH_RESUME, "its cells and options from the run's manifest")
        # The processes that run what is missing, capped as a new run's --concurrency is (the note said once the
        # run is known to be resumable); None: the run's own concurrency, as it began.
        processes, lowered = (
            _within_cores(args.concurrency, args.force_concurrency) if args.concurrency else (None, None)
        )
        request = Request.read(args.resume)
        if request is not None:  # stopped before its grid was planned: plan it again, from the same words
            # The paths given now are read from here, before the words are read from where the run began.
            args.junit = args.junit.absolute() if args.junit else None
            again = _requested(args, request)
            if again.junit:  # given now (made absolute above), or in the words, relative to where they were said
                again.junit = Path(request.cwd) / again.junit  # said by a path that holds from any folder
                check_junit_path(again.junit, args.resume)
            hold = claim(args.resume, fresh=False)
            os.chdir(request.cwd)
            try:
                return _plan_and_run(again, hold, created=False, resumed=True, processes=(processes, lowered))
            except RunInterrupted:
                raise
            except KeyboardInterrupt:  # while it planned its grid again: its request stays, as resumable as it was
                raise RunInterrupted(args.resume) from None
        # A user's policy (package.module:attr) imports as it did when the run began, from wherever it resumes.
        look_in(Request.folder(args.resume))
        # The JUnit path the run began with is checked again too: it is written when the run completes, and a
        # file put there meanwhile (or a path edited into the manifest) is not to be written over.
        junit = args.junit or begun_as(args.resume)[1].junit
        if junit:
            check_junit_path(junit, args.resume)
        table = _EarlyTable()
        try:
            resumed = resume_grid(
                args.resume,
                progress=None if args.quiet else _progress,
                report=not args.no_report,
                reading=None if args.quiet else _ReadingLines(),
                tallied=table,
                processes=processes,
                checked=lowered,
            )
        except RunInterrupted:
            raise
        except KeyboardInterrupt:  # before its cells ran (while it checked its inputs): as resumable as it was
            raise RunInterrupted(args.resume) from None
        if resumed is None:
            ended = Ended.read(args.resume)
            unfired = ended.unfired if begun_as(args.resume)[1].unfired == "fail" else 0
            status = _exit_status(ended.harness_errors, unfired, ended.tracking_ok, junit_failed=False)
            said = _ENDED.get(status)
            print(f"nothing to resume: the run in {args.resume} is complete" + (f"; {said}" if said else ""))
            for name in ("summary.csv", "coverage.json"):
                if not (args.resume / name).is_file():  # a complete run keeps nothing to write them from again
                    print(
                        f"harness: warning: {args.resume / name} is missing (deleted since the run completed), and a "
                        "complete run is not run again; fix: run its grid anew with another --out",
                        file=sys.stderr,
                    )
            # Asked for now, or asked for when the run began and not written (the run was stopped just before):
            # the JUnit XML of the run as it stands.
            if args.junit or (junit is not None and not junit.exists()):
                assert junit is not None
                _write_junit(junit, begun_as(args.resume)[0], args.resume)
                print(f"junit: {junit}")
            return status
        plan, options = begun_as(args.resume)
        args.junit = args.junit or options.junit  # the JUnit XML the run was asked for, written now it is complete
        args.unfired = options.unfired
        return _ran(args, resumed, plan, table)
    if args.records == "full" and args.failing_files is not None:
        raise UsageError(
            "--failing-files: limits the recovery.json files of cells written as compact records, and --records "
            "full writes one for every case; fix: drop --failing-files, or give --records compact or auto"
        )
    # Absolute, so that every command the run prints (resume, reproduce) runs from any folder.
    args.out = args.out.absolute() if args.out else None
    created = args.out is None or not args.out.exists()
    if args.junit:
        check_junit_path(args.junit, args.out)
    return _plan_and_run(args, begin(args.out, argv), created)


def _requested(args: argparse.Namespace, request: Request) -> argparse.Namespace:
    """The words a run stopped before it planned its grid was given, as that run read them, with what the resume
    adds (``--quiet``, ``--no-report``, ``--junit``); a request.json edited or damaged so that they are not the
    words of a run, or whose folder is gone, is refused naming it, and the folder is left as it was."""
    from harness.model import REQUEST
    from harness.run.plan import UsageError

    where = args.resume / REQUEST
    mend = "fix: start the run anew with another --out (the request was edited or damaged)"
    if not request.argv or request.argv[0] != "run" or "--resume" in request.argv:
        raise UsageError(f"{where}: field 'argv': not the words of a 'harness run' that plans a grid; {mend}")
    if not Path(request.cwd).is_dir():
        raise UsageError(
            f"{where}: field 'cwd': {request.cwd} is no longer a folder, and the run's words are read from there; "
            "fix: make that folder again, or start the run anew with another --out"
        )
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            again = _parser().parse_args(_attached(list(request.argv)))
    except SystemExit:
        # The parser's own fix is the last "; fix: " (a refused value may hold those words too): replaced.
        refused = said.getvalue().strip().removeprefix("harness: ")
        refused = refused.rpartition("; fix: ")[0] or refused
        raise UsageError(f"{where}: field 'argv': {refused}; {mend}") from None
    again.quiet = again.quiet or args.quiet
    again.no_report = again.no_report or args.no_report
    again.junit = args.junit or again.junit
    return again


def _plan_and_run(
    args: argparse.Namespace,
    hold: Claim,
    created: bool,
    resumed: bool = False,
    processes: tuple[int | None, Callable[[], None] | None] = (None, None),
) -> int:
    """Plan the grid ``args`` ask for and run it in the claimed folder; bad input leaves nothing behind (a
    ``resumed`` run's folder is left as it was: its request stays, to be mended or started anew). ``processes``:
    those a resume's ``--concurrency`` asks to run the pieces in (the plan splits the cells as ``args`` say), and
    what to say of it once the input is known to be good."""
    from harness.run import GridOptions, run_grid
    from harness.run.grid import abandon

    def undo() -> None:
        if resumed:
            hold.release()
        else:
            abandon(hold, created)

    try:
        plan, note = _plan(args)
    except BaseException:
        undo()
        raise
    workers, lowered = processes
    notes = [n for n in (note, lowered) if n is not None]

    def said() -> None:
        for each in notes:
            each()

    options = GridOptions(
        out=hold.out,
        tracking=args.tracking,
        project=args.project,
        report=not args.no_report,
        records=args.records,
        failing_files=args.failing_files,
        case_timeout_s=args.case_timeout or None,
        unfired=args.unfired,
        junit=args.junit.absolute() if args.junit else None,
    )
    table = _EarlyTable()
    try:
        summary = run_grid(
            plan,
            options,
            progress=None if args.quiet else _progress,
            begun=hold,
            checked=said if notes else None,
            reading=None if args.quiet else _ReadingLines(),
            tallied=table,
            processes=workers,
        )
    except RunFailed:  # not bad input: the folder could not be written (it resumes from its request)
        raise
    except InputError:
        if not (hold.out / "manifest.json").is_file():
            undo()
        raise
    return _ran(args, summary, plan, table)


def _plan(args: argparse.Namespace) -> tuple[Plan, Callable[[], None] | None]:
    """The grid asked for, and what to say once its input is known to be good (a lowered concurrency)."""
    from harness.run import plan_cells
    from harness.run.plan import Plan

    seeds: Sequence[int] | None = tuple(args.seed) if args.seed else None
    if args.seed_count:
        seeds = range(1, args.seed_count + 1)
    plan = plan_cells(args.policy, args.scenario, seeds, args.polyaxonfile, args.concurrency)
    # Said when the user asked for it: on the command line, or in a polyaxonfile they gave (the default grid's
    # two processes are lowered on a one-core machine without a word).
    said = "--concurrency" if args.concurrency else f"{args.polyaxonfile}: matrix.concurrency"
    concurrency, note = _within_cores(plan.concurrency, args.force_concurrency, said)
    return Plan(plan.cells, concurrency), note if args.concurrency or args.polyaxonfile else None


def cores_here() -> int:
    """The cores this process may run on: its CPU affinity (``taskset``, a container's cpuset), which a CI runner
    often holds below the machine's cores, else the machine's (one when unknown)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0)) or 1
    return os.cpu_count() or 1


def _within_cores(asked: int, force: bool, said: str = "--concurrency") -> tuple[int, Callable[[], None] | None]:
    """At most one process per core, unless forced; with what to say when it was lowered."""
    cores = cores_here()
    if asked <= cores or force:
        return asked, None

    def note() -> None:
        print(
            f"harness: {said} {asked} is more than the {cores} cores here; using {cores} "
            "(pass --force-concurrency to use it anyway)",
            file=sys.stderr,
        )

    return cores, note


#: Failing cells a run names with a reproduce command (summary.csv has every case's).
_NAMED_CELLS_MAX = 20


def _write_junit(junit: Path, plan: Plan, out: Path) -> None:
    """The JUnit XML of the run in ``out``: a test case per case of ``plan``, from the cases on disk."""
    from harness.gate.junit import write_junit
    from harness.gate.repro import ReproFolder
    from harness.gate.runner import grid_suites
    from harness.run.files import iter_reports

    cells = [(c.policy_spec, c.scenario_spec) for c in plan.cells]
    all_seeds = sorted({s for c in plan.cells for s in c.seeds})
    # The repro files' paths as absolute ones: a reproduce command read from the JUnit runs from anywhere, and a
    # resumed run's JUnit is the same whichever folder the resume was started from.
    repros = ReproFolder((out / "repro").absolute())
    write_junit(junit, grid_suites(cells, all_seeds, iter_reports(out), repros))


class _EarlyTable:
    """The outcome table, printed once every case is counted and before report.html is drawn (seconds on the
    default grid; a run stopped then has said what it found). A reader gone by then (``| head``) does not stop
    the run: its files are written, and the run exits as one whose reader went away."""

    def __init__(self) -> None:
        self.printed = False
        self.reader_gone = False

    def __call__(
        self, counts: dict[tuple[str, str], Counter[str]], policies: Sequence[str], scenarios: Sequence[str]
    ) -> None:
        from harness.present.table import outcome_table

        self.printed = True
        try:
            print(outcome_table(counts, policies, scenarios), flush=True)
        except BrokenPipeError:
            self.reader_gone = True
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _ran(args: argparse.Namespace, summary: GridSummary, plan: Plan | None, table: _EarlyTable | None = None) -> int:
    """Print what a finished (or resumed) run found, and turn it into the exit status."""
    from harness.model import FAILING
    from harness.present.table import outcome_table

    # Files first: what is printed may go to a reader that stops early ('| head'), which ends the printing.
    try:
        problem = _junit_problem(args.junit, plan, summary.out) if args.junit is not None and plan is not None else None
    except KeyboardInterrupt:  # the run is complete on disk; its JUnit file (written whole or not at all) is not
        out = shlex.quote(str(summary.out))
        raise KeyboardInterrupt(
            f"interrupted while writing --junit {args.junit}; the run in {summary.out} is complete, and a resume "
            f"writes it: python -m harness run --resume {out}"
        ) from None
    if table is None or not table.printed:
        print(outcome_table(summary.counts, summary.policies, summary.scenarios))
    print(
        f"\n{summary.cases:,} case{'' if summary.cases == 1 else 's'} in {summary.out}"
        f"  (summary: {summary.summary_csv})"
    )
    # Per cell, its first case with the worst outcome seen (a harness error only where nothing else failed).
    failing = sorted((n for n in summary.notable if n.outcome in FAILING), key=lambda n: FAILING.index(n.outcome))
    failing += [n for n in summary.errors if (n.policy, n.scenario) not in {(f.policy, f.scenario) for f in failing}]
    worst, seen = [], set()
    for n in failing:
        if (n.policy, n.scenario) not in seen:
            seen.add((n.policy, n.scenario))
            worst.append(n)
    if worst:
        print("\nreproduce a failing case (the first of each failing cell, worst outcome first):")
        from harness.run.replay import printable

        for n in worst[:_NAMED_CELLS_MAX]:
            # A shell comment: the line still runs as it is, pasted whole.
            crashed = (
                f"  # the policy failed: {printable(cut_keeping_place(n.policy_error, 120))}" if n.policy_error else ""
            )
            print(f"  {n.outcome:<13} {n.reproduce}{crashed}")
        if len(worst) > _NAMED_CELLS_MAX:
            print(
                f"  ... and {len(worst) - _NAMED_CELLS_MAX} more failing cells; {summary.summary_csv} has every "
                "case's outcome and reproduce command"
            )
    for n in summary.errors:
        print(f"harness error in {n.policy} x {n.scenario} seed {n.seed}: {n.error}", file=sys.stderr)
    if summary.error_count > len(summary.errors):
        print(
            f"harness: {summary.error_count} harness errors in all, {len(summary.errors)} named above; "
            f"every one is in {summary.summary_csv}",
            file=sys.stderr,
        )
    if summary.tracking.message:
        print(summary.tracking.message, file=sys.stdout if summary.tracking.ok else sys.stderr)
    if summary.report_html is not None:
        print(f"report: {summary.report_html}")
    files, size = summary.failing_files
    if files > FAILING_FILES_SAID:
        print(
            f"harness: note: {files:,} cases that are not correct each have a recovery.json beside their compact "
            f"record ({size / 1e6:,.1f} MB, more on disk); --failing-files N keeps at most N per cell, every case "
            "still loaded and replayed from the records",
            file=sys.stderr,
        )
    if problem is not None:
        print(problem, file=sys.stderr)
    elif args.junit:
        print(f"junit: {args.junit}")
    for c in summary.unfired:
        # A case the harness could not run reached no fault: that, not the scenario, may be why this one never fired.
        _, failed = summary.finished(c.scenario)
        fix, cases = (_MEND_FIRST, "no case of this run that finished") if failed else (c.fix, "no case of this run")
        print(
            f"harness: {_NOTED[args.unfired]}scenario {c.scenario} declares {c.what}, which fired in {cases} "
            f"({c.reached_in}); {fix}",
            file=sys.stderr,
        )
    unfired = len(summary.unfired) if args.unfired == "fail" else 0
    if table is not None and table.reader_gone:
        return EXIT_BROKEN_PIPE
    return _exit_status(summary.error_count, unfired, summary.tracking.ok, problem is not None)


#: How an unfired fault's line begins: an error's (exit 4), or a note's (``--unfired note``).
_NOTED = {"fail": "", "note": "note: "}


#: Past this many recovery.json files of failing cases beside compact records, a run says how to write fewer.
FAILING_FILES_SAID = 10_000

#: The fix for a fault that fired in no case where some case did not finish (it may have fired there).
_MEND_FIRST = "fix: mend the harness errors above first; a case that did not run reached no fault"


def _push(out: Path, project: str | None) -> int:
    """``harness push RUN_DIR``: the folder's offline runs sent to the server, those it has already skipped."""
    from harness.plx.tracking import offline_root, push_runs
    from harness.run.folder import Manifest
    from harness.run.grid import check_project
    from harness.run.plan import UsageError

    runs = offline_root(out) / "runs"
    uuids = sorted(p.name for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []
    if not uuids:
        raise UsageError(
            f"{out}: holds no offline Polyaxon run ({runs} is missing or empty); fix: give a folder 'harness run' "
            "or 'harness explore' wrote with --tracking offline (the default)"
        )
    if project is None:
        manifest = Manifest.read(out) if (out / "manifest.json").is_file() else None
        project = str(manifest.options.get("project", DEFAULT_PROJECT)) if manifest is not None else DEFAULT_PROJECT
    check_project(project)
    result = push_runs(offline_root(out), uuids, project, skip_present=True)
    sent, present = len(result.pushed), len(result.present)
    done = f"{sent} of {len(uuids)} run{'' if len(uuids) == 1 else 's'} sent to project {project}" + (
        f" ({present} the server had already)" if present else ""
    )
    if result.error:
        unset = "" if os.environ.get("POLYAXON_HOST") else "; POLYAXON_HOST is not set: set it to the server's address"
        print(
            f"harness: could not send runs to Polyaxon ({result.error}{unset}); {done}; nothing local is lost: give "
            f"the same command again, and it sends the rest: python -m harness push {shlex.quote(str(out))}"
            + (f" --project {shlex.quote(project)}" if project != DEFAULT_PROJECT else ""),
            file=sys.stderr,
        )
        return EXIT_TRACKING
    print(f"Polyaxon: {done}")
    return EXIT_OK


def _exit_status(harness_errors: int, unfired: int, tracking_ok: bool, junit_failed: bool) -> int:
    """A finished run's exit status (and a complete one's, resumed: the same facts, read from its run.json)."""
    if harness_errors or junit_failed:
        return EXIT_HARNESS_ERROR
    if unfired:
        return EXIT_COVERAGE
    return EXIT_OK if tracking_ok else EXIT_TRACKING


#: What a complete run's exit status, given again on a resume, says of it.
_ENDED = {
    EXIT_HARNESS_ERROR: "it ended with harness errors (summary.csv names them), so it exits 1 again",
    EXIT_COVERAGE: "a fault or operator event it declares fired in no case (coverage.json), so it exits 4 again",
    EXIT_TRACKING: "its Polyaxon tracking failed, so it exits 3 again",
}


def _junit_problem(junit: Path, plan: Plan, out: Path) -> str | None:
    """Write the run's JUnit XML; on a full disk (the run itself complete), what to say: how to write it later."""
    try:
        _write_junit(junit, plan, out)
    except OSError as exc:
        if not no_room(exc):
            raise
        return (
            f"harness: --junit {junit}: cannot write it ({exc.strerror or exc}); fix: make room or give a writable "
            f"path, then write it: python -m harness run --resume {shlex.quote(str(out))} --junit "
            f"{shlex.quote(str(junit))}"
        )
    return None


#: A run of at least this many cases is a sweep: its progress lines add the cases done, the rate and the time
#: left (a grid of a few seeds per cell finishes before those figures would mean anything).
SWEEP_FROM = 10_000


def _progress(progress: Progress, job: CellJob, result: CellResult) -> None:
    from harness.run.cell import cell_scenario

    outcomes: Counter[str] = Counter()
    for counter in result.counts.values():
        outcomes.update(counter)
    counts = ", ".join(f"{o} {n}" for o, n in outcomes.items())
    done, total = progress.pieces_done, progress.pieces
    width = len(str(total))
    seeds = job.seeds
    # A line per piece: a cell split over processes says which of its seeds this piece ran.
    if len(seeds) == 1:
        span = f"seed {seeds[0]}"
    elif isinstance(seeds, range) or len(seeds) > 3:
        span = f"{len(seeds):,} seeds, {seeds[0]}..{seeds[-1]}"
    else:
        span = f"seeds {', '.join(map(str, seeds))}"
    which = f" ({span}, piece {job.part + 1} of {job.parts})" if job.parts > 1 else ""
    # Named as the outcome table names the cell: by the policy's and scenario's own names, not the specs given.
    names = sorted(result.counts)
    policy = names[0][0] if names else job.policy_spec
    scenario = cell_scenario([s for _, s in names]) if names else job.scenario_spec
    line = f"[{done:>{width}}/{total}] {policy} x {scenario}{which}: {counts}"
    if progress.cases >= SWEEP_FROM:
        line += f"; {_sweep(progress)}"
    print(line, file=sys.stderr)


#: Seconds between two progress lines of a report reading a run's cases back.
READING_EVERY_S = 5.0


class _ReadingLines:
    """Progress lines while the report reads a run's cases back (a million, about 40 s here): one every
    ``every_s`` seconds, then, once one was said, one when every file is read. A report that reads in less
    says nothing."""

    def __init__(self, every_s: float | None = None, page: str = "report.html") -> None:
        self.every_s = READING_EVERY_S if every_s is None else every_s
        #: The page written once every file is read (``harness report --out`` names its own).
        self.page = page
        self._next_s = self.every_s
        self._said = False

    def __call__(self, reading: Reading) -> None:
        done = reading.files_read == reading.files
        if reading.elapsed_s < self._next_s and not (done and self._said):
            return
        self._said = True
        self._next_s = reading.elapsed_s + self.every_s
        line = (
            f"harness: report: read {reading.files_read:,} of {reading.files:,} files, {reading.cases:,} "
            f"{'case' if reading.cases == 1 else 'cases'}, in {_duration(reading.elapsed_s)}"
        )
        print(line + (f"; writing {self.page}" if done else ""), file=sys.stderr)


class _CheckProgress:
    """How far a check's cases have got, on stderr every ``EVERY_S`` seconds of a long check (a CI job that
    prints nothing for ten minutes is often stopped as hung): nothing for a check that ends sooner."""

    EVERY_S = 10.0

    def __init__(self) -> None:
        self._said = time.monotonic()

    def __call__(self, progress: Progress, job: CellJob, result: CellResult) -> None:
        now = time.monotonic()
        if now - self._said >= self.EVERY_S and progress.cases_done < progress.cases:
            self._said = now
            print(f"check: {_sweep(progress)}", file=sys.stderr, flush=True)


def _sweep(progress: Progress) -> str:
    """``12,000 of 1,000,000 cases, 3,912 cases/s, about 4 min 13 s left``: how a long run is going."""
    said = f"{progress.cases_done:,} of {progress.cases:,} cases"
    rate, remaining_s = progress.rate, progress.remaining_s
    if rate is None or remaining_s is None:
        return said
    said += f", {rate:,.0f} cases/s"
    if progress.cases_done < progress.cases:
        said += f", about {_duration(remaining_s)} left"
    return said


def _duration(seconds: float) -> str:
    """``45 s``, ``4 min 13 s``, ``2 h 05 min``: to the nearest second, then from an hour whole minutes."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def _force_concurrency(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force-concurrency",
        action="store_true",
        help="use --concurrency as given even when it is more than the cores this process may use",
    )


def _unfired(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--unfired",
        choices=("fail", "note"),
        default="fail",
        help=f"a fault or operator event a scenario declares that fired in no case of this {what}: fail (default) "
        "exits 4; note says it all the same, and exits as if it had fired (for a job that runs one cell of a grid, "
        "as a Polyaxon grid's does: another policy may fire it)",
    )


def _case_timeout(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--case-timeout",
        type=_seconds,
        default=DEFAULT_CASE_TIMEOUT_S,
        metavar="SECONDS",
        help=f"wall-clock budget of one case; a case over it, or one whose worker process dies, is stopped and "
        f"{what} (default {DEFAULT_CASE_TIMEOUT_S:g}; 0: no budget)",
    )


def _replayed(path: Path) -> tuple[str, ...]:
    """What differs when the finding at ``path`` is replayed (nothing: it replays)."""
    from harness.run.replay import replay

    try:
        return replay(path).differences
    except InputError as exc:
        return (str(exc),)


#: What may be given with ``explore --resume``: everything else comes from the exploration's request.
_WITH_EXPLORE_RESUME = frozenset({"command", "resume", "quiet", "concurrency"})


def _explore(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from harness.explore import ExploreOptions, explore, resume_explore
    from harness.policy import builtin_policy_names
    from harness.scenario import list_scenarios

    progress = None if args.quiet else _explore_progress
    if args.resume is not None:
        explicit = _only_with_resume(
            argv, _WITH_EXPLORE_RESUME, "its policies, templates and options from the exploration's request"
        )
        processes, lowered = None, None
        if "concurrency" in explicit:  # lowered to the cores, said once the exploration is known to be resumable
            processes, lowered = _within_cores(args.concurrency, args.force_concurrency)
        summary, options = resume_explore(args.resume.absolute(), processes, progress, checked=lowered)
    else:
        concurrency, note = _within_cores(args.concurrency, args.force_concurrency)
        if note is not None:
            note()
        options = ExploreOptions(
            out=args.out.absolute() if args.out else None,  # every command printed runs from any folder
            depth=args.depth,
            swarm=args.swarm,
            seeds=tuple(range(1, args.seed_count + 1)),
            concurrency=concurrency,
            shard=args.shard[0],
            shards=args.shard[1],
            tracking=args.tracking,
            project=args.project,
            case_timeout_s=args.case_timeout or None,
            unfired=args.unfired,
            resumable=True,
        )
        summary = explore(
            args.policy or builtin_policy_names(), args.scenario or list_scenarios(), options, progress=progress
        )
    rate = summary.schedules / summary.elapsed_s if summary.elapsed_s else 0.0
    print(
        f"{summary.schedules:,} schedules, {summary.cases:,} cases judged with {summary.simulated:,} simulations "
        "(shrinking's included; a schedule that adds what a smaller schedule's run never reached is judged from "
        f"that run) in {summary.elapsed_s:.1f} s "
        f"({rate:,.0f} schedules/s); {_many(summary.violating, 'violating case')}, "
        f"{_many(len(summary.findings), 'finding')} in {summary.out}"
    )
    for name, count in sorted(summary.violations.items()):
        print(f"  {name}: {_many(count, 'violating case')}")
    for exploration in summary.explorations:
        if exploration.findings:
            print(
                f"  {exploration.policy} x {exploration.scenario_spec}: {_many(len(exploration.findings), 'finding')} "
                f"in {exploration.findings[0][1].parent}"
            )
    shown = summary.findings[:FINDINGS_SHOWN]
    if shown:
        print("replay a finding:" if len(shown) == len(summary.findings) else f"the first {len(shown)} findings:")
    why = ""
    for finding, path in shown:
        print(f"  {finding.outcome:<10} {', '.join(finding.properties)}: python -m harness replay {path}")
        # Each finding shown is replayed, as `check` replays its repro files: a policy that does not decide the
        # same way twice (a count of its own, a clock) gives findings nobody can replay. One that could not be
        # judged (over its budget) would only take its budget again.
        differences = _replayed(path) if finding.outcome != "harness_error" else ()
        if differences:
            print(f"    warning: it does not replay: {differences[0]}")
            why = why or differences[-1]
    if len(summary.findings) > len(shown):
        print(f"  ... and {len(summary.findings) - len(shown)} more, listed in {summary.out / 'explore.json'}")
    if summary.findings and options.shards > 1:
        print(
            f"  shard {options.shard} of {options.shards}: these are candidates (every copy the choice over all shards "
            "could need); load_explorations of every shard's folder chooses the findings one exploration would write"
        )
    if why:
        print(f"  warning: a finding above does not replay: {why}")
    for error in summary.errors:
        print(f"harness error (exploration went on): {error}", file=sys.stderr)
    for u in summary.unfired:
        # As a run says it: a case that did not finish reached no fault, so the error comes first.
        fix = _MEND_FIRST if u.scenario in summary.stopped_in else u.fix
        print(
            f"harness: {_NOTED[options.unfired]}scenario {u.scenario} declares {u.what}, which fired in no case of the "
            f"policies explored ({u.reached_in}); {fix}",
            file=sys.stderr,
        )
    if summary.tracking.message:
        print(summary.tracking.message, file=sys.stdout if summary.tracking.ok else sys.stderr)
    if summary.findings or summary.errors:
        return EXIT_HARNESS_ERROR
    if summary.unfired and options.unfired == "fail":
        return EXIT_COVERAGE
    return EXIT_OK if summary.tracking.ok else EXIT_TRACKING


def _many(n: int, noun: str) -> str:
    """``1 finding``, ``2,000 findings``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _explore_progress(done: int, total: int, result: object) -> None:
    from harness.explore.search import JobResult

    assert isinstance(result, JobResult)
    # Violating cases, not findings: a part's findings are only candidates until every part's are merged.
    part = f" (part {result.shard + 1} of {result.shards})" if result.shards > 1 else ""
    violating = sum(result.violating.values())
    print(
        f"[{done:>{len(str(total))}}/{total}] {result.scenario}{part}: {result.schedules:,} schedules, "
        f"{_many(violating, 'violating case')}",
        file=sys.stderr,
    )


def _check(args: argparse.Namespace) -> int:
    from harness.gate.junit import check_junit_path, write_junit
    from harness.gate.runner import CheckOptions, check_policy
    from harness.run import UsageError

    if len(args.policy) > 1:
        raise UsageError("--policy given more than once: check gates one policy; fix: run check once per policy")
    if args.junit:
        check_junit_path(args.junit, args.out)
    concurrency, lowered = _within_cores(args.concurrency, args.force_concurrency)
    if lowered is not None:
        lowered()
    options = CheckOptions(
        scenarios=tuple(args.scenario or ()),
        seeds=tuple(range(1, args.seed_count + 1)),
        explore=args.explore,
        out=args.out.absolute() if args.out else None,  # every command printed runs from any folder
        concurrency=concurrency,
        case_timeout_s=args.case_timeout or None,
        baseline=args.baseline,
        maxfail=args.maxfail,
    )
    summary = check_policy(
        args.policy[0],
        options,
        progress=None if args.quiet else _explore_progress,
        cases_progress=None if args.quiet else _CheckProgress(),
    )
    unwritten = None
    if args.junit:  # before printing: a reader that stops early ('| head') ends the printing
        try:
            write_junit(args.junit, summary.suites())
        except OSError as exc:
            if not no_room(exc):
                raise
            again = "with a new --out (this one holds the cases)" if args.out else "the same command"
            unwritten = (
                f"harness: --junit {args.junit}: cannot write it ({exc.strerror or exc}); fix: make room or give a "
                f"writable path, then run {again}"
            )
    for case in summary.failures:
        print(f"FAIL {case.policy} x {case.name}: {case.message}; reproduce: {case.reproduce or '(see the JUnit)'}")
        for difference in case.differences:
            print(f"  warning: its repro file does not replay to this case: {difference}")
    for note in summary.notes:
        print(note, file=sys.stderr)
    outcomes = [c.outcome for c in summary.cases if not c.passed]
    counts = ", ".join(f"{o} {outcomes.count(o):,}" for o in dict.fromkeys(outcomes))
    line = (
        f"{summary.policy} (revision {summary.policy_revision}): {len(summary.cases) - len(outcomes):,} of "
        f"{len(summary.cases):,} cases correct or escalated"
        + (" and complete where the baseline completes" if args.baseline else "")
        + (f"; not: {counts}" if counts else "")
    )
    if args.explore:
        found = sum(not c.passed and c.outcome != "harness_error" for c in summary.explored)
        line += f"; {summary.schedules:,} schedules explored (each at every seed), {_many(found, 'finding')}"
        failed_on = next((c.message for c in summary.explored if c.outcome == "harness_error"), None)
        if failed_on is not None:
            line += f" ({failed_on.removeprefix('harness_error: ')})"
    print(line + (f"; cases and repro files in {summary.out}" if summary.out else ""))
    if unwritten is not None:
        print(unwritten, file=sys.stderr)
        print("check: failed (no JUnit file)")
        return EXIT_UNSAFE
    if args.junit:
        print(f"junit: {args.junit}")
    print("check: passed" if summary.ok else "check: failed")
    return EXIT_OK if summary.ok else EXIT_UNSAFE


def _replay(case: Path) -> int:
    from harness.run.replay import printable, replay, timeline_text

    result = replay(case)
    print(timeline_text(result.report))
    report = result.report
    print(f"\n{report.policy} x {report.scenario} seed {report.seed}: {report.outcome} (verdict {report.verdict})")
    for anomaly in report.anomalies:
        print(f"  {anomaly.kind}: {printable(anomaly.detail)} (entries {', '.join(map(str, anomaly.witnesses))})")
    if result.same:
        print("replayed: the same as recorded")
        return EXIT_OK
    for difference in result.differences:
        print(f"harness: replay differs: {difference}", file=sys.stderr)
    return EXIT_HARNESS_ERROR


def _report(run_dir: Path, out: Path | None = None) -> int:
    from harness.present.html_report import write_report
    from harness.run import UsageError
    from harness.run.folder import in_use
    from harness.run.pictures import draw_timelines

    run_dir = run_dir.absolute()  # every command it prints (resume, replay, report --out) runs from any folder
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: not a folder; fix: give a folder written by 'harness run'")
    if in_use(run_dir):
        raise UsageError(
            f"{run_dir}: a harness run is still writing it; fix: wait for that run to end (it writes its own "
            "report.html unless given --no-report), then run this again"
        )
    if (run_dir / "explore.json").is_file() and not (run_dir / "cases").is_dir():
        raise UsageError(
            f"{run_dir}: an exploration (explore.json), not a run: it holds findings, not cases; fix: replay a "
            f"finding with python -m harness replay {shlex.quote(str(run_dir))}/findings/<policy>/<file>.yaml, or "
            "load them all with harness.present.analysis.load_explorations"
        )

    def draw(paths: Sequence[Path]) -> None:
        print(f"drawing {len(paths)} {'timeline' if len(paths) == 1 else 'timelines'}...", file=sys.stderr)
        draw_timelines(paths, cores_here())

    if out is not None and out.suffix.lower() not in (".html", ".htm"):
        raise UsageError(
            f"--out {out}: not a page's name; fix: give a file name ending in .html, as in --out {out}.html"
        )
    try:
        page = write_report(
            run_dir,
            out,
            draw=draw if out is None else None,
            tell=lambda line: print(f"harness: {_line(line)}", file=sys.stderr),
            progress=_ReadingLines(page="report.html" if out is None else out.name),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        if out is not None or not no_room(exc):
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        raise RunFailed(
            f"{run_dir}: cannot write its report{where}: {exc.strerror or exc}; fix: write it elsewhere, as in "
            f"python -m harness report {shlex.quote(str(run_dir))} --out /tmp/report.html"
        ) from None
    print(page)
    if (run_dir / "manifest.json").is_file() and not (run_dir / "run.json").is_file():
        print(
            f"harness: {run_dir} is incomplete (the run was stopped before it ended), and so is its report; "
            f"resume: python -m harness run --resume {shlex.quote(str(run_dir))}",
            file=sys.stderr,
        )
    return EXIT_OK


def _list(scenarios: Sequence[str] | None = None) -> int:
    """Every shipped policy, scenario and boundary; with ``scenarios``, only those scenarios, each loaded as a run
    loads it (a file of the user's is checked: one line naming the field and the fix if it does not load)."""
    from harness.policy import builtin_policy_names, load_policy
    from harness.scenario import (
        BOUNDARIES,
        is_scenario_path,
        list_scenarios,
        load_scenario,
        resolve_scenario,
        scenario_cases,
    )

    # Every line made before any is printed: a policy or scenario file that does not load ends the listing in its
    # one-line error, not after half of it.
    lines = [] if scenarios else ["policies:"]
    if not scenarios:
        lines += [f"  {name} (revision {load_policy(name).revision})" for name in builtin_policy_names()]
    lines.append("scenarios:")
    # A path made absolute as a run makes it (not through harness.run, which would load far more than a list needs).
    for name in (
        [os.path.abspath(s) if is_scenario_path(s) else s for s in scenarios] if scenarios else list_scenarios()
    ):
        cases = scenario_cases(name)
        variants = f"; {len(cases)} cases: {', '.join(spec for spec, _ in cases)}" if len(cases) > 1 else ""
        scenario = cases[0][1]
        # A file of the user's by the name it gives itself, and where it is.
        shown = f"{load_scenario(resolve_scenario(name)).name}" if is_scenario_path(name) else name
        where = f" in {name}" if is_scenario_path(name) else ""
        lines.append(f"  {shown} (revision {scenario.revision}{variants}){where}")
        lines.append(f"      {_first_sentence(scenario.description)}")
    if scenarios:
        print("\n".join(lines))
        return EXIT_OK
    lines.append("fault boundaries:")
    for boundary, cls in BOUNDARIES.items():
        doc = " ".join((cls.__doc__ or "").split()).replace("``", "")  # the docstring's markup, not for a terminal
        lines.append(f"  {boundary} ({cls.side}): {doc.split(': ')[0].split('. ')[0].rstrip('.')}")
    print("\n".join(lines))
    return EXIT_OK


def _first_sentence(text: str, limit: int = 200) -> str:
    """What a description says first, on one line (its whole text is in the scenario file)."""
    words = " ".join(text.split())
    # A full stop, not an ellipsis, and not inside a quotation (an even number of double quotes before it, when
    # the quotes pair up at all: a lone one, as in 3.5", quotes nothing).
    paired = words.count('"') % 2 == 0
    stops = re.finditer(r"(?<!\.)\.(?!\.) ", words)
    end = next((m for m in stops if not paired or words.count('"', 0, m.start()) % 2 == 0), None)
    first = words if end is None else words[: end.start() + 1]
    if len(first) <= limit:
        return first
    cut = first[: limit - 3]
    # At a word: the last space before the limit, unless there is none (one long word is cut where it must be).
    return f"{(cut.rsplit(' ', 1)[0] if ' ' in cut else cut).rstrip()}..."


def _schema(args: argparse.Namespace) -> int:
    from harness.present.shape import recovery_schema
    from harness.run import UsageError
    from harness.run.files import check_writable, write_atomic

    text = json.dumps(recovery_schema(), indent=2) + "\n"
    if args.out:
        if args.out.is_file() and not _is_case_schema(args.out):
            raise UsageError(
                f"--out {args.out}: exists and is not a schema of recovery.json; fix: give a new file name, or "
                "remove it"
            )
        check_writable(args.out, "--out")
        write_atomic(args.out, text)
        print(args.out)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _is_case_schema(path: Path) -> bool:
    """Whether an existing file is a schema ``harness schema`` wrote (an earlier one, which it may write over)."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(_SCHEMA_MAX))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("title") == "CaseReport" and "properties" in data


#: An existing file larger than this is no schema the harness wrote (its own is about 70 KB).
_SCHEMA_MAX = 4 * 1024 * 1024


def script() -> int:
    """The ``harness`` command the package installs: ``python -m harness`` by another name. As ``-m`` does, it puts
    the folder it is run in first on the import path, so that a policy of one's own (``package.module:attr``) in
    that folder imports as it would with ``python -m harness``; an installed script's own folder is first
    otherwise, and the module was not found."""
    sys.path.insert(0, os.getcwd())
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    stderr = sys.stderr
    sys.stderr = OutlivesReader(stderr)
    try:
        return _main(words)
    finally:
        sys.stderr = stderr


def _main(words: list[str]) -> int:
    args = _parser().parse_args(_attached(words))
    _STOPPED.clear()
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _stop)  # a terminated run stops as cleanly as an interrupted one
    interrupt = signal.getsignal(signal.SIGINT)
    if interrupt is signal.default_int_handler:  # Python's own (not where SIGINT was ignored when it started)
        signal.signal(signal.SIGINT, _stop)
    try:
        return _command(args, words)
    except RunFailed as exc:
        print(f"harness: {_line(exc)}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    except InputError as exc:
        print(f"harness: {_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        print(f"harness: {_line(exc) or 'interrupted'}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of the output went away (``harness list | head -1``): not a bug, nothing more to say. What is
        # still buffered goes nowhere, so that Python's flush at exit does not complain either.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if not no_room(exc):  # a file missing, say: maybe a bug of the harness, as below
            return _internal_error(exc)
        where = f" ({exc.filename})" if exc.filename else ""
        print(
            f"harness: cannot write a file{where}: {exc.strerror or exc}; fix: make room or give a writable "
            "folder, then run the command again",
            file=sys.stderr,
        )
        return EXIT_HARNESS_ERROR
    except ModuleNotFoundError as exc:
        if not _missing_dependency(exc):
            return _internal_error(exc)
        print(
            f"harness: this Python ({sys.executable}) cannot import '{exc.name}', which the harness needs; fix: run "
            "the harness with the Python it was installed for (.venv/bin/python -m harness ..., or activate that "
            "venv first), or install it for this one: pip install -e .",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except Exception as exc:
        return _internal_error(exc)
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, interrupt)


def _missing_dependency(exc: ModuleNotFoundError) -> bool:
    """Whether ``exc`` says a package the harness needs is not installed for this Python (as when a printed
    ``python -m harness`` command is pasted where ``python`` is not the venv's): a module of another package,
    not one of the harness's own (whose absence would be a bug of the harness)."""
    name = exc.name or ""
    return bool(name) and name.partition(".")[0] not in ("harness", "policies")


def _internal_error(exc: Exception) -> int:
    """A bug of the harness: one line with where to look, not a traceback. Unless an interrupt came first: a
    Ctrl-C that lands while a module is imported can surface as another error (Python wraps it when it lands in
    a class's ``__set_name__``, as a pydantic model is built; pydantic-core when it lands in building a
    validator, keeping only its text). It is the interrupt it was, and exits as one."""
    if _STOPPED or _caused_by_interrupt(exc):
        print("harness: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    import traceback

    where = Path(tempfile.gettempdir()) / f"harness-error-{os.getpid()}.txt"
    with contextlib.suppress(OSError):
        where.write_text(traceback.format_exc(), encoding="utf-8")
    print(
        f"harness: internal error: {type(exc).__name__}: {_line(exc)[:300]}; this is a bug of the harness "
        f"(traceback in {where}); fix: report it with that file",
        file=sys.stderr,
    )
    return EXIT_HARNESS_ERROR


def _line(message: object) -> str:
    """A message on one line whatever text it echoes: a line break a user typed (in a policy name, a number, a
    path) is shown as ``\\n``, so every error stays one line without losing what was given."""
    return str(message).replace("\r", "\\r").replace("\n", "\\n")


#: The signals (SIGINT, SIGTERM) that came during the command: once one has, any error is taken for the interrupt.
_STOPPED: list[int] = []


def _stop(signum: int, frame: object) -> None:
    _STOPPED.append(signum)
    raise KeyboardInterrupt


def _caused_by_interrupt(exc: BaseException) -> bool:
    """Whether a ``KeyboardInterrupt`` is among the causes or contexts of ``exc``."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if args.command == "run":
        return _run(args, argv)
    if args.command == "list":
        return _list(getattr(args, "scenario", None))
    if args.command == "view":
        from harness.plx.viewer import view

        return view(args.run_dir, args.port)
    if args.command == "report":
        return _report(args.run_dir, args.out)
    if args.command == "push":
        return _push(args.run_dir, args.project)
    if args.command == "explore":
        return _explore(args, argv)
    if args.command == "replay":
        return _replay(args.case)
    if args.command == "check":
        return _check(args)
    return _schema(args)

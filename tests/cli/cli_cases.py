"""What the test drivers of tests/cli share (flag_harness, policy_matrix, usage_cases): the
binary, the repository root, a cut of the openb trace small enough to replay in a moment, and
running cases in parallel with the one closing line CI reads ("N passed, M failed")."""

import concurrent.futures
import os

BIN = os.environ.get("TESSERA_BIN", "build/tessera")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPENB = os.path.join(ROOT, "..", "shared", "data", "openb")


def cut_openb(tmp, pods, nodes):
    """The first `pods` pods and `nodes` nodes of the default openb trace, written into `tmp`;
    their paths (trace, node list)."""
    paths = []
    for src, dst, n in (("openb_pod_list_default.csv", "pods.csv", pods),
                        ("openb_node_list_gpu_node.csv", "nodes.csv", nodes)):
        paths.append(os.path.join(tmp, dst))
        with open(os.path.join(OPENB, src)) as f, open(paths[-1], "w") as g:
            for i, line in enumerate(f):
                if i > n:
                    break
                g.write(line)
    return tuple(paths)


def run_cases(cases, check, workers, name):
    """check(case) for every case, `workers` at a time; prints each failure (name(case): why)
    and the closing line; 1 if anything failed."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        problems = list(pool.map(check, cases))
    failed = [f"{name(c)}: {why}" for c, why in zip(cases, problems) if why]
    for f in failed:
        print("FAIL", f)
    print(f"{len(cases) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0

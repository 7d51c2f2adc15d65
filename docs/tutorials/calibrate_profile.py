"""Tutorial 4: calibrate a machine profile, then predict with it.

``commsolve calibrate`` measures this machine under MPI (ping-pong across sizes, on- and
off-node where it can, the injection rate, the send overhead, the solve's block kernels,
training solves) and fits the model's parameters into a TOML profile; every model and the
simulator then take that file where they take a bundled profile's name.

    python calibrate_profile.py                   # 2 ranks, the full calibration (minutes)
    python calibrate_profile.py --quick           # fewer sizes and solves (about half a minute)
"""

import argparse
import os
import subprocess
import sys
import tempfile

import commsolve as cs

parser = argparse.ArgumentParser()
parser.add_argument("--quick", action="store_true", help="fewer sizes, samples and training solves")
parser.add_argument("-o", "--output", default=None, help="profile to write (default: a temporary file)")
parser.add_argument("--plot", default=None, help="PNG of measured against modelled times")
parser.add_argument("--ppn", type=int, default=None, help="ranks per virtual node (default: the real layout)")
args = parser.parse_args()

path = args.output or os.path.join(tempfile.mkdtemp(), "here.toml")
cmd = [sys.executable, "-m", "commsolve", "calibrate", "-np", "2", "-o", path, "--accept-noisy"]
if args.quick:
    cmd.append("--quick")
if args.plot:
    cmd += ["--plot", args.plot]
if args.ppn:
    cmd += ["--ppn", str(args.ppn)]
print("$", " ".join(cmd[1:]), flush=True)
subprocess.run(cmd, check=True)

here = cs.model.load_profile(path)
print(f"profile {here.name}: {here.description[:100]}")

# The same halo exchange priced with this machine's profile and with Blue Waters'
topo = cs.make_topology(size=1024, ppn=16)
G = cs.gallery.poisson3d(48)
plans = cs.virtual.plans(G, cs.partition.partition(G, 1024), strategy="node-aware", topology=topo)
for profile in (path, "bluewaters"):
    t = cs.model.CostModel(profile).price(plans, topo).time
    print(f"halo exchange of poisson3d:48 at 1,024 ranks (node-aware): {t * 1e6:.1f} us on "
          f"{cs.model.load_profile(profile).name}")

# A triangular solve simulated with it, on this machine's 2 ranks
S = cs.direct.symbolic(cs.gallery.poisson2d9(128), pz=2)
r = cs.sim.simulate(cs.sim.solve_schedule(S, (1, 1, 2), "3d"), cs.make_topology(size=2, ppn=2), path)
print(f"3d solve of poisson2d9:128 on 1x1x2, predicted for this machine: {r.predicted_s * 1e3:.3f} ms")

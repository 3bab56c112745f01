#!/usr/bin/env python3
"""Chebyshev series of the special functions coil composes from body ops
(src/lowering/special.cpp), computed with mpmath at 40 digits and written to
src/lowering/special_tables.inc.

Each table is a function f of t in [-1, 1] (the variable the C++ code maps x to, spelled in
the table's comment and in `to_x` here) as sum' c_k T_k(t), truncated where the terms fall
below 1e-17 of the largest. The script checks every series in float64 at 400 random points
against mpmath and fails when one is off by more than `--max-error` (relative, or for a function with zeros
relative to its largest term).

    .venv/bin/python scripts/special_tables.py          # rewrite the table file
    .venv/bin/python scripts/special_tables.py --check  # fail if it is not up to date
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import mpmath as mp

mp.mp.dps = 40
OUT = Path(__file__).resolve().parent.parent / "src/lowering/special_tables.inc"


def erfcx(x):
    return mp.exp(x * x) * mp.erfc(x)


def erfcinv(q):
    """erfc^-1(q) for 0 < q <= 0.1, by Newton's method on erfc at enough digits."""
    with mp.workdps(60):
        x = mp.sqrt(-mp.log(q))
        for _ in range(100):
            step = (mp.erfc(x) - q) / (-2 / mp.sqrt(mp.pi) * mp.exp(-x * x))
            x -= step
            if abs(step) < mp.mpf(10) ** -45 * x:
                break
        return x


# erfinv's tail: q = 1 - |y| (or erfcinv's q) in [4e-324, 0.1] as u = 1/sqrt(-ln q) in [U_LO, U_HI].
U_LO, U_HI = 1 / mp.sqrt(-mp.log(mp.mpf("4e-324"))), 1 / mp.sqrt(-mp.log(mp.mpf("0.1")))


def tail_u(t):
    return U_LO + (U_HI - U_LO) * (t + 1) / 2


# name: (what the C++ code maps x to, f(t), the points N the series is fitted on[, "absolute"
# for a function with zeros: its error measured against its largest term])
TABLES = {
    # erfcx(x) (x + 4) for x >= 0 (1 / sqrt(pi) at infinity), t = (x - 4) / (x + 4).
    "kErfcx": ("t = (x - 4) / (x + 4), x >= 0; f = erfcx(x) (x + 4)",
               lambda t: erfcx(4 * (1 + t) / (1 - t)) * 8 / (1 - t) if t < 1 else 1 / mp.sqrt(mp.pi), 64),
    # erfinv(y) / y for |y| <= 0.9, t = y^2 / 0.405 - 1.
    "kErfinvCentral": ("t = y^2 / 0.405 - 1, |y| <= 0.9; f = erfinv(y) / y",
                       lambda t: (mp.erfinv(mp.sqrt((t + 1) * mp.mpf("0.405"))) / mp.sqrt((t + 1) * mp.mpf("0.405"))
                                  if t > -1 else 2 / mp.sqrt(mp.pi)), 80),
    # erfc^-1(q) for 4e-324 <= q <= 0.1 as u erfc^-1(q), u = 1 / sqrt(-ln q), t linear in u.
    "kErfcinvTail": (f"u = 1 / sqrt(-ln q) in [{mp.nstr(U_LO, 20)}, {mp.nstr(U_HI, 20)}], t linear in u; "
                     "f = u erfc^-1(q)",
                     lambda t: erfcinv(mp.exp(-1 / tail_u(t) ** 2)) * tail_u(t), 80),
}


def x_of_linear(t, hi):
    """x in [0, hi] from t = 2x/hi - 1."""
    return (t + 1) * hi / 2


def x_of_square(t, hi):
    """x in [0, hi] from t = 2x^2/hi^2 - 1."""
    return mp.sqrt((t + 1) / 2) * hi


def x_of_inverse(t, lo):
    """x in [lo, inf) from t = 2 lo/x - 1."""
    return 2 * lo / (t + 1)


def bessel_pq(order, x):
    """The modulus-phase pair (P, Q) of J and Y: J = sqrt(2/(pi x)) (P cos c - Q sin c),
    Y = sqrt(2/(pi x)) (P sin c + Q cos c), c = x - (2 order + 1) pi / 4."""
    j, y = mp.besselj(order, x), mp.bessely(order, x)
    c = x - (2 * order + 1) * mp.pi / 4
    a = mp.sqrt(mp.pi * x / 2)
    return a * (j * mp.cos(c) + y * mp.sin(c)), a * (y * mp.cos(c) - j * mp.sin(c))


BESSEL = {
    # I0, I1: exp(-x) I(x) (over x for I1) in x/4 - 1 on [0, 8]; exp(-x) sqrt(x) I(x) in 16/x - 1 beyond.
    "kI0Small": ("t = x/4 - 1, 0 <= x <= 8; f = exp(-x) I0(x)",
                 lambda t: mp.exp(-x_of_linear(t, 8)) * mp.besseli(0, x_of_linear(t, 8)), 80),
    "kI0Large": ("t = 16/x - 1, x >= 8; f = exp(-x) sqrt(x) I0(x)",
                 lambda t: (lambda x: mp.exp(-x) * mp.sqrt(x) * mp.besseli(0, x))(x_of_inverse(t, 8)), 80),
    "kI1Small": ("t = x/4 - 1, 0 <= x <= 8; f = exp(-x) I1(x) / x",
                 lambda t: (lambda x: mp.exp(-x) * mp.besseli(1, x) / x if x else mp.mpf(1) / 2)(x_of_linear(t, 8)),
                 80),
    "kI1Large": ("t = 16/x - 1, x >= 8; f = exp(-x) sqrt(x) I1(x)",
                 lambda t: (lambda x: mp.exp(-x) * mp.sqrt(x) * mp.besseli(1, x))(x_of_inverse(t, 8)), 80),
    # K0, K1: the parts left by the logarithm, entire in x^2, on [0, 2]; exp(x) sqrt(x) K(x) beyond.
    "kK0Small": ("t = x^2/2 - 1, 0 <= x <= 2; f = K0(x) + ln(x/2) I0(x)",
                 lambda t: (lambda x: mp.besselk(0, x) + mp.log(x / 2) * mp.besseli(0, x))(x_of_square(t, 2)), 60,
                 "absolute"),
    "kK1Small": ("t = x^2/2 - 1, 0 <= x <= 2; f = x (K1(x) - ln(x/2) I1(x))",
                 lambda t: (lambda x: x * (mp.besselk(1, x) - mp.log(x / 2) * mp.besseli(1, x)))(x_of_square(t, 2)),
                 60),
    "kK0Large": ("t = 4/x - 1, x >= 2; f = exp(x) sqrt(x) K0(x)",
                 lambda t: (lambda x: mp.exp(x) * mp.sqrt(x) * mp.besselk(0, x))(x_of_inverse(t, 2)), 80),
    "kK1Large": ("t = 4/x - 1, x >= 2; f = exp(x) sqrt(x) K1(x)",
                 lambda t: (lambda x: mp.exp(x) * mp.sqrt(x) * mp.besselk(1, x))(x_of_inverse(t, 2)), 80),
    # J0, J1, Y0, Y1 on [0, 8] in x^2/32 - 1 (Y less its logarithm), their P and x Q in 16/x - 1
    # beyond.
    "kJ0Small": ("t = x^2/32 - 1, 0 <= x <= 8; f = J0(x)",
                 lambda t: mp.besselj(0, x_of_square(t, 8)), 80, "absolute"),
    "kJ1Small": ("t = x^2/32 - 1, 0 <= x <= 8; f = J1(x) / x",
                 lambda t: (lambda x: mp.besselj(1, x) / x if x else mp.mpf(1) / 2)(x_of_square(t, 8)), 80,
                 "absolute"),
    "kY0Small": ("t = x^2/32 - 1, 0 <= x <= 8; f = Y0(x) - (2/pi) ln(x) J0(x)",
                 lambda t: (lambda x: mp.bessely(0, x) - 2 / mp.pi * mp.log(x) * mp.besselj(0, x))(x_of_square(t, 8)),
                 80, "absolute"),
    "kY1Small": ("t = x^2/32 - 1, 0 <= x <= 8; f = (Y1(x) - (2/pi) (ln(x) J1(x) - 1/x)) / x",
                 lambda t: (lambda x: (mp.bessely(1, x) - 2 / mp.pi * (mp.log(x) * mp.besselj(1, x) - 1 / x)) / x)(
                     x_of_square(t, 8)), 80, "absolute"),
    "kP0": ("t = 16/x - 1, x >= 8; f = P0(x)", lambda t: bessel_pq(0, x_of_inverse(t, 8))[0], 80),
    "kQ0": ("t = 16/x - 1, x >= 8; f = x Q0(x)", lambda t: x_of_inverse(t, 8) * bessel_pq(0, x_of_inverse(t, 8))[1], 80),
    "kP1": ("t = 16/x - 1, x >= 8; f = P1(x)", lambda t: bessel_pq(1, x_of_inverse(t, 8))[0], 80),
    "kQ1": ("t = 16/x - 1, x >= 8; f = x Q1(x)", lambda t: x_of_inverse(t, 8) * bessel_pq(1, x_of_inverse(t, 8))[1], 80),
}
TABLES.update(BESSEL)


def airy_zeta(a):
    return 2 * a ** mp.mpf(1.5) / 3


# Airy Ai: the series on [-8, 2]; beyond 2, exp(-zeta) / (2 sqrt(pi) x^(1/4)) times F; below -8,
# |x|^(-1/4) / sqrt(pi) (sin(zeta + pi/4) P - cos(zeta + pi/4) Q); F, P and zeta Q smooth in
# 1 / zeta, zeta = (2/3) |x|^(3/2).
ZETA_2, ZETA_8 = airy_zeta(mp.mpf(2)), airy_zeta(mp.mpf(8))


def a_of_zeta(t, zeta_lo):
    """|x| from t = 2 zeta_lo / zeta - 1."""
    return (3 * (2 * zeta_lo / (t + 1)) / 2) ** (mp.mpf(2) / 3)


def airy_pq(a):
    """(P, zeta Q) of Ai(-a) = a^(-1/4) / sqrt(pi) (sin(zeta + pi/4) P - cos(zeta + pi/4) Q),
    from Ai and Bi(-a) = a^(-1/4) / sqrt(pi) (cos(zeta + pi/4) P + sin(zeta + pi/4) Q)."""
    z = airy_zeta(a)
    s, c = mp.sin(z + mp.pi / 4), mp.cos(z + mp.pi / 4)
    ai, bi = mp.airyai(-a), mp.airybi(-a)
    k = mp.sqrt(mp.pi) * a ** mp.mpf(0.25)
    return k * (ai * s + bi * c), z * k * (bi * s - ai * c)


TABLES.update({
    "kAiryAiSmall": ("t = (x + 3) / 5, -8 <= x <= 2; f = Ai(x)", lambda t: mp.airyai(5 * t - 3), 90, "absolute"),
    "kAiryAiF": ("t = 2 zeta_2 / zeta - 1, x >= 2; f = Ai(x) 2 sqrt(pi) x^(1/4) exp(zeta)",
                 lambda t: (lambda x: mp.airyai(x) * 2 * mp.sqrt(mp.pi) * x ** mp.mpf(0.25) * mp.exp(airy_zeta(x)))(
                     a_of_zeta(t, ZETA_2)) if t > -1 else mp.mpf(1), 80),
    "kAiryAiP": ("t = 2 zeta_8 / zeta - 1, x <= -8; f = P", lambda t: airy_pq(a_of_zeta(t, ZETA_8))[0] if t > -1 else mp.mpf(1),
                 80),
    "kAiryAiQ": ("t = 2 zeta_8 / zeta - 1, x <= -8; f = zeta Q",
                 lambda t: airy_pq(a_of_zeta(t, ZETA_8))[1] if t > -1 else mp.mpf(5) / 72, 80),
})

# Constants the C++ code maps with, written beside the tables.
CONSTANTS = {"kErfcinvTailU": (U_LO, U_HI), "kAiryZeta": (ZETA_2, ZETA_8)}


def chebyshev(f, n):
    nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / n) for j in range(n)]
    values = [f(t) for t in nodes]
    c = [2 * mp.fsum(values[j] * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / n) for j in range(n)) / n
         for k in range(n)]
    c[0] /= 2
    biggest = max(abs(x) for x in c)
    while len(c) > 1 and abs(c[-1]) < mp.mpf("1e-17") * biggest:
        c.pop()
    return [float(x) for x in c]


def clenshaw(c, t):
    b1 = b2 = 0.0
    for ck in reversed(c[1:]):
        b1, b2 = ck + 2 * t * b1 - b2, b1
    return c[0] + t * b1 - b2


def worst_error(f, c, kind):
    """The largest error of the series in float64 at random points: relative to the value, or
    for a function with zeros ("absolute") to the largest coefficient."""
    rng = random.Random(0)
    worst = 0.0
    scale = max(abs(x) for x in c)
    for _ in range(400):
        t = rng.uniform(-1, 1)
        want = f(mp.mpf(t))
        den = scale if kind == "absolute" else max(abs(want), mp.mpf("1e-300"))
        worst = max(worst, abs(clenshaw(c, t) - want) / den)
    return float(worst)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="fail when the table file is not up to date")
    p.add_argument("--max-error", type=float, default=4e-15)
    args = p.parse_args()
    lines = ["// Generated by scripts/special_tables.py; do not edit. Chebyshev series sum' c_k T_k(t)",
             "// (c_0 already halved) of the special functions in special.cpp, each with its variable.", ""]
    for name, values in CONSTANTS.items():
        lines.append(f"constexpr double {name}[] = {{{', '.join(repr(float(v)) for v in values)}}};")
    lines.append("")
    for name, (doc, f, n, *kind) in TABLES.items():
        c = chebyshev(f, n)
        err = worst_error(f, c, kind[0] if kind else "relative")
        print(f"{name}: {len(c)} terms, worst relative error {err:.2e}", file=sys.stderr)
        if err > args.max_error:
            print(f"{name}: error {err:.2e} above {args.max_error:.0e}", file=sys.stderr)
            return 1
        lines.append(f"// {doc}")
        lines.append(f"constexpr double {name}[] = {{")
        lines += [f"    {x!r}," for x in c]
        lines.append("};")
        lines.append("")
    text = "\n".join(lines)
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.name} is not up to date: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

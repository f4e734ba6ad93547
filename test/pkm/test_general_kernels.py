"""The compiled general route (robot_dynamics/pkm/_general_kernels.py, the default route of
``inverse_dynamics_d2_general`` and :class:`GeneralID2Data`) against the numpy route
(``route='numpy'``, the oracle validated in test_general_pkm.py) on every robot there: 3-UPU,
3-RPR (x-z), 3-RPS, Gough-Stewart (pose task), planar 3RRR (redundant actuation, SEA); batched
and single, cold (every sample from theta_guess) and warm-started (each sample from the previous
solution + the predictor step); status / error paths."""

import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.errors import InputError
from robot_dynamics.pkm.general import GeneralID2Data, general_pkm, inverse_dynamics_d2_general
from robot_dynamics.control.trajectories import SinSquaredJerk
from robot_dynamics.pkm.recursive import PKMSingularityError, inverse_dynamics_d2
from test_general_pkm import DATA, URDF, _args  # noqa: E402  (the same robots and motions)

PATHS = {
    'upu': os.path.join(DATA, 'tripteron_3upu.urdf'),
    'rpr': os.path.join(DATA, 'planar_3rpr_xz.urdf'),
    'rps': os.path.join(DATA, 'rps_3.urdf'),
    'gs': os.path.join(URDF, 'gough_stewart.urdf'),
    'rrr': os.path.join(URDF, 'planar_3rrr_sea.urdf'),
}
ROBOTS = list(PATHS)
FIELDS = ('u', 'ud', 'udd', 'theta', 'theta_a', 'J_IK', 'w', 'Cp', 'Vp')
_models = {}


def _model(name):
    if name not in _models:
        _models[name] = rd.load_model(PATHS[name])
    return _models[name]


def _motion(name, t):
    if name == 'rrr':
        traj = SinSquaredJerk([-0.05, 0.0], [0.05, 0.0], 0.5)
        P = np.moveaxis(traj(0.01 + 0.48 * np.asarray(t)), 0, 1)
        return tuple(P[:, k] for k in range(5))
    return _args(name, t)


def _close(a, b, tol=1e-10):
    """Every field of two GeneralID2Results equal to ``tol`` relative (per field)."""
    for f in FIELDS:
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        assert x.shape == y.shape, (f, x.shape, y.shape)
        err = np.max(np.abs(x - y)) / max(np.max(np.abs(y)), 1e-300)
        assert err <= tol, (f, err)


@pytest.mark.parametrize('name', ROBOTS)
def test_compiled_equals_numpy_batched_and_single(name):
    m = _model(name)
    g = np.array([0.0, -9.81, 0.0]) if name == 'rrr' else None
    args = _motion(name, np.linspace(0.0, 1.0, 9))
    ref = inverse_dynamics_d2_general(m, *args, gravity=g, route='numpy')
    _close(inverse_dynamics_d2_general(m, *args, gravity=g), ref)
    # one sample (squeezed shapes)
    one = tuple(a[4] for a in args)
    _close(
        inverse_dynamics_d2_general(m, *one, gravity=g), inverse_dynamics_d2_general(m, *one, gravity=g, route='numpy')
    )
    # the Newton start per sample (theta_guess (S, Ntot)) is honoured
    th = ref.theta[:, 0] + 1e-3
    _close(inverse_dynamics_d2_general(m, *args, gravity=g, theta_guess=th), ref)


@pytest.mark.parametrize('name', ROBOTS)
def test_warm_start_and_workspace(name):
    """warm_start=True, GeneralID2Data.batch (predictor from the previous sample) and repeated
    single GeneralID2Data calls give the numpy route's numbers along a 40-sample motion."""
    m = _model(name)
    args = _motion(name, np.linspace(0.0, 1.0, 40))
    ref = inverse_dynamics_d2_general(m, *args, route='numpy')
    _close(inverse_dynamics_d2_general(m, *args, warm_start=True), ref)
    data = GeneralID2Data(m)
    _close(data.batch(*args), ref)
    assert np.max(np.abs(data.theta[0] - ref.theta[-1, 0])) < 1e-9
    data.reset()
    for s in range(0, 40, 3):
        U = data(*(a[s] for a in args))
        for k, r in enumerate((ref.u, ref.ud, ref.udd)):
            sc = np.max(np.abs(r))
            assert np.max(np.abs(U[k] - r[s])) <= 1e-10 * sc, (s, k)
        assert np.max(np.abs(data.theta_a - ref.theta_a[s])) <= 1e-10 * np.max(np.abs(ref.theta_a))


@pytest.mark.parametrize('name', ['gs', 'upu'])
def test_threads_give_the_sequential_result(name):
    """threads=2 (parallel chunks, pkm/_general_kernels.general_id_d2_chunks) equals one
    sequential pass: cold per-sample starts, warm_start (the second chunk's first sample is
    checked against the first chunk's last solution) and GeneralID2Data.batch; a batch shorter
    than two chunks runs sequentially."""
    m = _model(name)
    args = _motion(name, np.linspace(0.0, 1.0, 150))
    for kw in ({}, {'warm_start': True}):
        _close(
            inverse_dynamics_d2_general(m, *args, threads=2, **kw), inverse_dynamics_d2_general(m, *args, **kw), 1e-9
        )
    seq, par = GeneralID2Data(m), GeneralID2Data(m)
    _close(par.batch(*args, threads=2), seq.batch(*args), 1e-9)
    assert np.max(np.abs(par.theta - seq.theta)) < 1e-9
    short = tuple(a[:40] for a in args)
    _close(
        inverse_dynamics_d2_general(m, *short, warm_start=True, threads=2),
        inverse_dynamics_d2_general(m, *short, warm_start=True),
        1e-12,
    )


@pytest.mark.parametrize('name', ROBOTS)
def test_without_jik_derivative_rows(name):
    """jik_derivatives=False (u' and u'' from adjoint products, no rows of J_IK', J_IK''): the
    same u, ud, udd to round-off; J_IK[:, 1:] NaN for square actuation, all formed otherwise;
    GeneralID2Data calls (which use it) equal the full batch."""
    m = _model(name)
    g = np.array([0.0, -9.81, 0.0]) if name == 'rrr' else None
    args = _motion(name, np.linspace(0.0, 1.0, 12))
    full = inverse_dynamics_d2_general(m, *args, gravity=g, warm_start=True)
    fast = inverse_dynamics_d2_general(m, *args, gravity=g, warm_start=True, jik_derivatives=False)
    for f in ('u', 'ud', 'udd', 'theta', 'w'):
        a, b = getattr(fast, f), getattr(full, f)
        assert np.max(np.abs(a - b)) <= 1e-11 * np.max(np.abs(b)), f
    square = fast.J_IK.shape[-2] == fast.J_IK.shape[-1]
    assert np.array_equal(fast.J_IK[:, 0], full.J_IK[:, 0])
    assert np.all(np.isnan(fast.J_IK[:, 1:])) if square else np.array_equal(fast.J_IK, full.J_IK)
    data = GeneralID2Data(m, gravity=g)
    for s in (0, 5, 11):
        U = data(*(a[s] for a in args))
        for k, r in enumerate((full.u, full.ud, full.udd)):
            assert np.max(np.abs(U[k] - r[s])) <= 1e-10 * np.max(np.abs(r)), (s, k)


@pytest.mark.parametrize('name', ['gs', 'upu'])
def test_taylor_predictor_spares_the_newton_steps(name):
    """Warm-started along a motion sampled at 1 kHz, the 4th-order Taylor predictor starts most
    samples within the Newton tolerance (0 Newton steps: IST[:, 1], kernel status info), and
    the result is the numpy route's (each sample from Newton to 1e-12)."""
    from robot_dynamics.pkm.general import _packed

    m = _model(name)
    p = general_pkm(m)
    pk = _packed(p)
    t = np.arange(300) * 1e-3
    args = _motion(name, t)
    S = len(t)
    IN = np.concatenate([np.asarray(args[0]).reshape(S, -1)] + [np.asarray(a) for a in args[1:]], 1)
    IP, FP = pk.params(p.gravity, 1e-12, 50, True)
    OUT, IST = np.empty((S, pk.nout)), np.empty((S, 2), np.int64)
    pk.run(IP, FP, IN, p.theta_ref[None].copy(), OUT, IST)
    assert not np.any(IST[:, 0])
    assert np.mean(IST[1:, 1] == 0) > 0.8, np.bincount(IST[:, 1])
    assert np.max(IST[1:, 1]) <= 1
    _close(inverse_dynamics_d2_general(m, *args, warm_start=True), inverse_dynamics_d2_general(m, *args, route='numpy'))


def test_chunk_join_resolves_a_wrong_or_failed_chunk_head():
    """_Packed._join: a chunk whose first sample left the previous chunk's branch (here: its
    theta overwritten) or failed where the sequential pass would not (its status set) is
    solved again sequentially from the previous chunk's last solution; a good head is kept."""
    from robot_dynamics.pkm.general import _packed

    m = _model('gs')
    p = general_pkm(m)
    pk = _packed(p)
    x, *D = _motion('gs', np.linspace(0.0, 1.0, 80))
    S = len(x)
    IN = np.concatenate([np.asarray(x).reshape(S, -1)] + list(D), 1)
    IP, FP = pk.params(p.gravity, 1e-12, 50, True)
    th0 = p.theta_ref[None].copy()
    ref_out, ref_ist = np.empty((S, pk.nout)), np.empty((S, 2), np.int64)
    pk.run(IP, FP, IN, th0, ref_out, ref_ist)
    assert not np.any(ref_ist[:, 0])
    bounds = np.array([0, 40, 80])
    for spoil in ('theta', 'status', None):
        OUT, IST = ref_out.copy(), ref_ist.copy()
        OUT[40:] = 7.0  # the redo must rewrite the whole chunk
        OUT[40, : pk.Nt] = ref_out[40, : pk.Nt]
        if spoil == 'theta':
            OUT[40, : pk.Nt] += 0.3
        elif spoil == 'status':
            IST[40, 0] = 1
        pk._join(IP, FP, IN, OUT, IST, bounds)
        if spoil is None:  # kept: nothing recomputed
            assert np.all(OUT[41:] == 7.0)
        else:
            assert not np.any(IST[:, 0])
            # every output field but the IK residual (round-off, 1e-13) to 1e-9 relative
            for k, (a, b) in enumerate(zip(pk.views(OUT)[:-1], pk.views(ref_out)[:-1])):
                assert np.max(np.abs(a - b)) <= 1e-9 * max(np.max(np.abs(b)), 1e-300), (spoil, k)


@pytest.mark.parametrize('name', ['gs', 'rpr', 'rrr'])
def test_warm_start_on_unordered_samples(name):
    """Samples in random order (large, inconsistent steps between neighbours: the predictor's
    2nd-order term is refused, the chord step may be poor): warm_start gives the numpy route's
    numbers (one assembly branch), and every sample took Newton steps from its predictor or,
    if that failed, from the previous solution."""
    m = _model(name)
    order = np.random.default_rng(3).permutation(30)
    args = tuple(a[order] for a in _motion(name, np.linspace(0.0, 1.0, 30)))
    ref = inverse_dynamics_d2_general(m, *args, route='numpy')
    _close(inverse_dynamics_d2_general(m, *args, warm_start=True), ref)


def test_dispatch_and_status_codes():
    gs, rpr, rrr = _model('gs'), _model('rpr'), _model('rrr')
    # rd.pkm.inverse_dynamics_d2(route='general') = the compiled general route
    a = inverse_dynamics_d2(gs, *(x[0] for x in _args('gs', np.array([0.3]))), route='general')
    b = inverse_dynamics_d2_general(gs, *(x[0] for x in _args('gs', np.array([0.3]))), route='numpy')
    for x, y in zip(a, (b.u, b.ud, b.udd)):
        assert np.max(np.abs(x - y)) <= 1e-10 * np.max(np.abs(y))
    # unreachable task (3RRR): IK not converged, same message and samples as the numpy route
    X = np.array([[0.0, 0.0], [1.0, 0.0]])
    Z = [np.zeros((2, 2))] * 4
    msgs = []
    for route in ('compiled', 'numpy'):
        with pytest.raises(PKMSingularityError, match='planar_3rrr_sea.*did not converge') as ei:
            inverse_dynamics_d2_general(rrr, X, *Z, route=route)
        assert list(ei.value.samples) == [1] and list(ei.value.status) == [0, 1]
        msgs.append(str(ei.value).split('(first')[0])
    assert msgs[0] == msgs[1]
    # joint limit (3-RPR): the joint named, status 5
    for route in ('compiled', 'numpy'):
        with pytest.raises(
            PKMSingularityError,
            match=r"planar_3rpr_xz.*joint limits.*joint 'leg\w*' = [-\d.e]+, outside its limits \[[-\d.e]+, [-\d.e]+\]",
        ) as ei:
            inverse_dynamics_d2_general(rpr, np.array([3.0, 0.6, 0.0]), *([np.zeros(3)] * 4), route=route)
        assert list(ei.value.status) == [5]
    # the workspace raises the same, and works again afterwards (warm start kept)
    data = GeneralID2Data(rrr)
    args = _motion('rrr', np.array([0.2]))
    u0 = data(*(x[0] for x in args)).copy()
    th0 = data.theta.copy()
    with pytest.raises(PKMSingularityError, match='did not converge'):
        data(np.array([1.0, 0.0]), *([np.zeros(2)] * 4))
    np.testing.assert_array_equal(data.theta, th0)
    np.testing.assert_allclose(data(*(x[0] for x in args)), u0, rtol=1e-12)
    with pytest.raises(InputError, match='non-finite'):
        data(np.array([np.nan, 0.0]), *([np.zeros(2)] * 4))
    with pytest.raises(InputError, match=r'x must be \(2,\)'):
        data(np.zeros(3), *([np.zeros(2)] * 4))
    # pose task: rotation part not orthonormal
    dg = GeneralID2Data(gs)
    X, V, Vd, Vdd, Vddd = (x[0] for x in _args('gs', np.array([0.1])))
    dg(X, V, Vd, Vdd, Vddd)
    Xb = X.copy()
    Xb[0, 0] = 1.1
    with pytest.raises(InputError, match='not orthonormal'):
        dg(Xb, V, Vd, Vdd, Vddd)
    with pytest.raises(InputError, match='not orthonormal'):
        inverse_dynamics_d2_general(gs, Xb, V, Vd, Vdd, Vddd)
    with pytest.raises(InputError, match='route'):
        inverse_dynamics_d2_general(gs, X, V, Vd, Vdd, Vddd, route='fast')


def test_singular_limb_and_parallel_status():
    """Kernel status codes on forced degenerate data (3-UPU): two equal screws in limb 0
    (singular limb Jacobian: status 2, info = the limb) and a task component given twice
    (dependent task rows: parallel singularity, status 7); the unmodified data solve (0)."""
    from robot_dynamics.pkm._general_kernels import IP_HEAD, general_id_d2_batch
    from robot_dynamics.pkm.general import _packed

    p = general_pkm(_model('upu'))
    pk = _packed(p)
    IP, FP = pk.params(p.gravity, 1e-12, 50, False)
    IN = np.concatenate([p.x_ref, np.zeros(12)])[None]
    OUT = np.empty((1, pk.nout))
    IST = np.empty((1, 2), np.int64)
    th0 = p.theta_ref[None] + 0.01

    def run(X=pk.X, IP=IP):
        general_id_d2_batch(pk.BR, pk.Bp, X, pk.M, IP, FP, IN, th0, OUT, IST)
        return tuple(IST[0])

    assert run()[0] == 0
    X0 = pk.X.copy()
    X0[0, 1] = X0[0, 0]
    assert run(X=X0) == (2, 0)
    L = len(p.limbs)
    IP7 = IP.copy()
    q1 = IP_HEAD + 3 * L + 1
    IP7[q1 : q1 + 3] = [0, 0, 1]
    assert run(IP=IP7)[0] == 7

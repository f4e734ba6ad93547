"""The compiled small linear algebra of robot_dynamics.spatial.linalg against numpy / scipy.

Random inputs of a fixed seed: well-conditioned ones, ill-conditioned ones (condition number
1e10), rank-deficient ones for the rank decisions and the pseudo-inverses, and the singular
cases every factorisation has to report.
"""

import numpy as np
import pytest
import scipy.linalg as sla

from robot_dynamics.spatial import linalg as la

RNG = np.random.default_rng(20240607)
SIZES = [1, 2, 3, 6, 9]


def _cond_matrix(n, cond, rng=RNG):
    """A random (n, n) matrix with the condition number cond (singular values log-spaced)."""
    U, _ = np.linalg.qr(rng.standard_normal((n, n)))
    V, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return U @ np.diag(np.logspace(0.0, -np.log10(cond), n)) @ V.T


def _rank_matrix(m, n, r, rng=RNG, scale=1.0):
    """A random (m, n) matrix of rank r (0 <= r <= min(m, n))."""
    if r == 0:
        return np.zeros((m, n))
    return scale * rng.standard_normal((m, r)) @ rng.standard_normal((r, n))


def _rel(a, b):
    return np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(np.linalg.norm(b), 1e-300)


# --------------------------------------------------------------------------- 3-vectors, 3 x 3
def test_three_vector_blocks_against_numpy():
    for _ in range(20):
        a, b = RNG.standard_normal(3), RNG.standard_normal(3)
        R = RNG.standard_normal((3, 3))
        B = RNG.standard_normal((3, 3))
        out, W, M = np.empty(3), np.empty((3, 3)), np.empty((3, 3))
        assert np.allclose(la.cross3(*a, *b), np.cross(a, b), rtol=1e-15, atol=1e-15)
        la.cross(a, b, out)
        assert np.allclose(out, np.cross(a, b), rtol=1e-15, atol=1e-15)
        assert la.dot3(a, b) == pytest.approx(a @ b, rel=1e-14, abs=1e-15)
        la.matvec3(R, a, out)
        assert np.allclose(out, R @ a, rtol=1e-14, atol=1e-15)
        assert np.allclose(la.matvec3_tuple(R, a), R @ a, rtol=1e-14, atol=1e-15)
        la.matTvec3(R, a, out)
        assert np.allclose(out, R.T @ a, rtol=1e-14, atol=1e-15)
        assert np.allclose(la.matTvec3_tuple(R, a), R.T @ a, rtol=1e-14, atol=1e-15)
        la.matmul3(R, B, M)
        assert np.allclose(M, R @ B, rtol=1e-14, atol=1e-14)
        la.hat(a, W)
        assert np.allclose(W @ b, np.cross(a, b), rtol=1e-14, atol=1e-15) and np.array_equal(W, -W.T)


@pytest.mark.parametrize('t', [0.0, 1e-9, 0.3, 2.0, np.pi, -2.5])
def test_rodrigues_is_the_exponential_of_the_axis(t):
    w = RNG.standard_normal(3)
    w /= np.linalg.norm(w)
    W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    E = np.array(la.rodrigues(*w, np.cos(t), np.sin(t))).reshape(3, 3)
    assert np.allclose(E, sla.expm(t * W), rtol=0, atol=1e-14)


# --------------------------------------------------------------------------- products
@pytest.mark.parametrize('trans', [False, True])
def test_matvec_and_matmul(trans):
    A = RNG.standard_normal((5, 4))
    x = RNG.standard_normal(5 if trans else 4)
    out = np.empty(4 if trans else 5)
    la.matvec(A, x, out, 5, 4, trans)
    assert np.allclose(out, (A.T if trans else A) @ x, rtol=1e-14, atol=1e-14)
    # leading blocks only
    out3 = np.full(5, np.nan)
    la.matvec(A, x, out3, 3, 2, trans)
    ref = A[:3, :2].T @ x[:3] if trans else A[:3, :2] @ x[:2]
    assert np.allclose(out3[: len(ref)], ref, rtol=1e-14, atol=1e-14)
    B = RNG.standard_normal((5 if trans else 4, 3))
    C = np.empty((4 if trans else 5, 3))
    la.matmul(A, B, C, trans)
    assert np.allclose(C, (A.T if trans else A) @ B, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize('lower', [False, True])
@pytest.mark.parametrize('trans', [False, True])
@pytest.mark.parametrize('unit', [False, True])
def test_tri_solve_against_scipy(lower, trans, unit):
    n = 7
    T = RNG.standard_normal((n + 2, n + 2)) + 4.0 * np.eye(n + 2)  # a larger buffer: T[:n, :n] is used
    b = RNG.standard_normal(n)
    x = b.copy()
    la.tri_solve(T, x, n, lower, trans, unit)
    ref = sla.solve_triangular(T[:n, :n], b, lower=lower, trans=1 if trans else 0, unit_diagonal=unit)
    assert np.allclose(x, ref, rtol=1e-12, atol=1e-13)


# --------------------------------------------------------------------------- LU
def _lu(A):
    n = A.shape[0]
    LU = A.copy()
    piv = np.empty(n, dtype=np.int64)
    return LU, piv, la.lu_factor(LU, n, n, piv)


@pytest.mark.parametrize('n', SIZES)
@pytest.mark.parametrize('cond', [1.0, 1e3, 1e10])
def test_lu_factor_and_solves_against_lapack(n, cond):
    A = _cond_matrix(n, cond)
    LU, piv, (dmin, dmax, sign) = _lu(A)
    # the same factorisation as LAPACK getrf (partial pivoting, first maximum)
    lu_ref, piv_ref = sla.lu_factor(A)
    assert np.array_equal(piv, piv_ref)
    assert np.allclose(LU, lu_ref, rtol=1e-14 * cond + 1e-12, atol=1e-14)
    assert dmin == pytest.approx(np.abs(np.diag(lu_ref)).min(), rel=1e-14 * cond + 1e-12)
    assert dmax == pytest.approx(np.abs(np.diag(lu_ref)).max(), rel=1e-12)
    assert sign == np.sign(np.linalg.det(A))
    b = RNG.standard_normal(n)
    x = b.copy()
    la.lu_solve(LU, piv, x)
    tol = 1e-14 * cond * n
    assert _rel(x, np.linalg.solve(A, b)) < tol
    x = b.copy()
    la.lu_solve_T(LU, piv, x)
    assert _rel(x, np.linalg.solve(A.T, b)) < tol
    Ai = np.empty((n, n))
    la.lu_inverse(LU, piv, Ai)
    assert _rel(Ai, np.linalg.inv(A)) < tol
    x = np.empty(n)
    assert la.solve(A, b, x)
    assert _rel(x, np.linalg.solve(A, b)) < tol
    # P A = L U with the row order of lu_perm
    perm = np.empty(n, dtype=np.int64)
    la.lu_perm(piv, n, perm)
    L = np.tril(LU, -1) + np.eye(n)
    assert np.allclose(A[perm], L @ np.triu(LU), rtol=0, atol=1e-13)


def test_lu_of_a_tall_block_and_of_singular_matrices():
    m, n = 9, 4
    buf = np.full((m + 2, n + 3), np.nan)
    A = RNG.standard_normal((m, n))
    buf[:m, :n] = A
    piv = np.empty(n, dtype=np.int64)
    dmin, dmax, _ = la.lu_factor(buf, m, n, piv)
    assert np.isnan(buf[m:, :]).all() and np.isnan(buf[:, n:]).all()  # only the block is touched
    perm = np.empty(m, dtype=np.int64)
    la.lu_perm(piv, m, perm)
    L = np.tril(buf[:m, :n], -1) + np.eye(m, n)
    assert np.allclose(A[perm], L @ np.triu(buf[:n, :n]), rtol=0, atol=1e-13)
    assert dmin > 0 and dmax < np.inf
    # singular: a zero pivot (the column is left), solve reports it, the determinant sign is 0
    S = _rank_matrix(5, 5, 3)
    S[:, 2] = 0.0
    LU, piv, (dmin, dmax, sign) = _lu(S)
    assert dmin == 0.0 and sign == 0.0 and np.isfinite(LU).all()
    assert not la.solve(S, np.ones(5), np.empty(5))
    assert not la.solve(np.array([[np.nan, 1.0], [0.0, 1.0]]), np.ones(2), np.empty(2))  # a NaN pivot
    # rank deficient without an exact zero: the smallest pivot is at roundoff level
    LU, piv, (dmin, dmax, sign) = _lu(_rank_matrix(6, 6, 4))
    assert dmin < 1e-12 * dmax


# --------------------------------------------------------------------------- Cholesky
@pytest.mark.parametrize('n', SIZES)
@pytest.mark.parametrize('cond', [1.0, 1e6, 1e10])
def test_cholesky_against_numpy(n, cond):
    B = _cond_matrix(n, np.sqrt(cond))
    S = B @ B.T
    L = np.zeros((n, n))
    assert la.chol_factor(S, L, 0.0) == -1
    assert np.allclose(L, np.linalg.cholesky(S), rtol=0, atol=1e-15 * np.sqrt(cond) * n)
    b = RNG.standard_normal(n)
    x = np.empty(n)
    la.chol_solve(L, b, x)
    tol = 1e-13 * cond * n
    assert _rel(x, np.linalg.solve(S, b)) < tol
    y = b.copy()
    la.chol_solve(L, y, y)  # in place
    assert np.array_equal(x, y)
    x = np.empty(n)
    assert la.solve_spd(S, b, x) and _rel(x, np.linalg.solve(S, b)) < tol
    assert la.is_pd(S, 1e-14)
    # in place on a copy: the lower triangle becomes the factor
    T = S.copy()
    la.chol_factor(T, T, 0.0)
    assert np.array_equal(np.tril(T), L)


def test_cholesky_reports_the_first_non_positive_pivot():
    S = np.diag([4.0, 1.0, -1.0, 2.0])
    L = np.zeros((4, 4))
    assert la.chol_factor(S, L, 0.0) == 2
    assert not la.solve_spd(S, np.ones(4), np.empty(4))
    assert not la.is_pd(S, 1e-12)
    P = _rank_matrix(5, 5, 3)
    P = P @ P.T  # positive semidefinite, rank 3
    assert not la.is_pd(P, 1e-12)
    assert la.chol_factor(np.diag([1.0, 1e-13]), np.zeros((2, 2)), 1e-12) == 1  # pivot below the tolerance


def _tree_sparse_spd(rng, n):
    """A random parent array (par[i] < i) and an SPD matrix with its branch-induced sparsity:
    M = sum over coordinates k of c_k c_k^T, c_k supported on the ancestors of k (a CRBA's M)."""
    par = np.array([-1] + [int(rng.integers(-1, i)) for i in range(1, n)], dtype=np.int64)
    M = np.zeros((n, n))
    for k in range(n):
        c = np.zeros(n)
        j = k
        while j >= 0:
            c[j] = rng.normal()
            j = par[j]
        M += np.outer(c, c) + 0.1 * np.diag((np.arange(n) == k).astype(float))
    return par, M


@pytest.mark.parametrize('n', [1, 2, 7, 25])
def test_tree_sparse_ltdl_solves_like_numpy_without_fill_in(n):
    rng = np.random.default_rng(n)
    par, M = _tree_sparse_spd(rng, n)
    # the pattern: M[i, j] != 0 only for i an ancestor of j or j of i
    anc = np.eye(n, dtype=bool)
    for k in range(n):
        j = par[k]
        while j >= 0:
            anc[k, j] = anc[j, k] = True
            j = par[j]
    assert np.all(M[~anc] == 0.0)
    H = M.copy()
    assert la.ltdl_factor(H, par, 0.0) == -1
    assert np.all(H[~anc] == 0.0)  # no fill-in
    b = rng.normal(size=n)
    x = np.empty(n)
    la.ltdl_solve(H, par, b, x)
    assert np.allclose(x, np.linalg.solve(M, b), rtol=0, atol=1e-10 * np.abs(np.linalg.solve(M, b)).max())
    # the factors: M = L^T D L
    L = np.tril(H, -1) + np.eye(n)
    assert np.allclose(L.T @ np.diag(np.diag(H)) @ L, M, atol=1e-12 * np.abs(M).max())


def test_tree_sparse_ltdl_reports_a_non_positive_pivot_from_the_leaves():
    par = np.array([-1, 0, 1], dtype=np.int64)
    M = np.array([[2.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])  # the leaf moves nothing
    assert la.ltdl_factor(M.copy(), par, 1e-12) == 2


# --------------------------------------------------------------------------- Householder QR
@pytest.mark.parametrize('m,n', [(6, 6), (9, 4), (3, 7)])
def test_pivoted_householder_qr_against_scipy(m, n):
    """B (n, m) = the matrix whose columns are the rows of W (m, n): B Pi = Q R; the column
    order and |R_kk| are those of LAPACK geqp3 (scipy.linalg.qr(pivoting=True))."""
    W = RNG.standard_normal((m, n))
    B = W.T.copy()
    k = min(m, n)
    piv, V, beta, rd = np.empty(m, np.int64), np.zeros((k, n)), np.zeros(k), np.zeros(k)
    Wf = W.copy()
    r = la.householder_qr(Wf, m, n, True, -1.0, piv, V, beta, rd)
    assert r == k
    Q_ref, R_ref, p_ref = sla.qr(B, pivoting=True)
    assert np.array_equal(piv[:k], p_ref[:k])
    assert np.allclose(np.abs(rd), np.abs(np.diag(R_ref))[:k], rtol=1e-12)
    R = np.zeros((k, m))
    for j in range(m):
        R[: min(j + 1, k), j] = Wf[j, : min(j + 1, k)]
    QT = np.empty((n, n))
    la.householder_q(V, beta, r, QT)
    Q = QT.T
    assert np.allclose(Q.T @ Q, np.eye(n), atol=1e-14)
    assert np.allclose(B[:, piv], Q[:, :k] @ R, rtol=0, atol=1e-13)
    assert np.allclose(np.diag(R), rd)
    # Q^T y and Q y with the reflectors
    y = RNG.standard_normal(n)
    z = y.copy()
    la.householder_apply(V, beta, r, z, True)
    assert np.allclose(z, Q.T @ y, atol=1e-14)
    la.householder_apply(V, beta, r, z, False)
    assert np.allclose(z, y, atol=1e-14)
    # the thin Q
    QTt = np.empty((k, n))
    la.householder_q(V, beta, r, QTt)
    assert np.allclose(QTt, QT[:k], atol=1e-15)


def test_householder_qr_stops_at_the_numerical_rank():
    m, n, r0 = 7, 5, 3
    W = _rank_matrix(m, n, r0)
    k = min(m, n)
    piv, V, beta, rd = np.empty(m, np.int64), np.zeros((k, n)), np.zeros(k), np.zeros(k)
    r = la.householder_qr(W.copy(), m, n, True, 1e-12 * np.linalg.norm(W), piv, V, beta, rd)
    assert r == r0
    # without pivoting the rows keep their order
    r = la.householder_qr(W.copy(), m, n, False, -1.0, piv, V, beta, rd)
    assert r == k and np.array_equal(piv, np.arange(m))


@pytest.mark.parametrize('n', SIZES)
def test_upper_tri_inverse(n):
    R = np.triu(RNG.standard_normal((n, n))) + 3.0 * np.eye(n)
    Ri = np.full((n, n), np.nan)
    fro = la.upper_tri_inverse(R, Ri, n)
    assert np.allclose(Ri, np.linalg.inv(R), rtol=1e-12, atol=1e-14)
    assert fro == pytest.approx(np.linalg.norm(np.linalg.inv(R)) ** 2, rel=1e-12)
    R[n - 1, n - 1] = 0.0
    assert la.upper_tri_inverse(R, Ri, n) == np.inf


# --------------------------------------------------------------------------- URV
@pytest.mark.parametrize('m,n,r', [(4, 7, 4), (7, 7, 7), (9, 5, 5), (6, 8, 3), (22, 14, 14), (5, 5, 0)])
def test_urv_pseudo_inverse_against_numpy(m, n, r):
    A = _rank_matrix(m, n, r)
    k = min(m, n)
    Q, Qb, Rbi, piv = np.empty((n, n)), np.empty((m, k)), np.empty((k, k)), np.empty(m, np.int64)
    rr, rho, s_lb = la.urv(A, Q, Qb, Rbi, piv)
    assert rr == r
    assert np.allclose(Q.T @ Q, np.eye(n), atol=1e-13)
    s = np.linalg.svd(A, compute_uv=False)
    if r == 0:
        assert s_lb == np.inf and rho == 0.0
        return
    assert rho <= 1e-13 * s[0] and 0 < s_lb <= s[r - 1] * (1 + 1e-12)
    # A = Pi Qb Rb Q1^T (rows in the order piv)
    Rb = np.linalg.inv(np.triu(Rbi[:r, :r]))
    assert np.allclose(A[piv], Qb[:, :r] @ Rb @ Q[:, :r].T, rtol=0, atol=1e-12 * s[0])
    Ap = np.linalg.pinv(A, rcond=1e-10)
    b = RNG.standard_normal(m)
    x = np.empty(n)
    la.urv_pinv_apply(Q, Qb, Rbi, piv, r, b, x)
    assert _rel(x, Ap @ b) < 1e-10
    F = RNG.standard_normal(n)
    y = np.empty(m)
    la.urv_pinvT_apply(Q, Qb, Rbi, piv, r, F, y)
    assert _rel(y, Ap.T @ F) < 1e-10
    # Q[:, r:] spans the null space of A
    assert np.allclose(A @ Q[:, r:], 0.0, atol=1e-12 * s[0])


# --------------------------------------------------------------------------- SVD
@pytest.mark.parametrize('m,n', [(3, 3), (5, 3), (3, 5), (12, 12), (8, 13), (20, 15), (1, 4), (4, 1)])
@pytest.mark.parametrize('cond', [1.0, 1e10])
def test_svd_against_lapack(m, n, cond):
    k = min(m, n)
    U0, _ = np.linalg.qr(RNG.standard_normal((m, k)))
    V0, _ = np.linalg.qr(RNG.standard_normal((n, k)))
    s0 = np.logspace(0.0, -np.log10(cond), k)
    A = U0 @ np.diag(s0) @ V0.T
    for f in (la.svd, la.jacobi_svd):
        U, s, Vt = f(A)
        assert U.shape == (m, k) and s.shape == (k,) and Vt.shape == (k, n)
        assert np.all(np.diff(s) <= 0)
        assert np.allclose(s, s0, rtol=0, atol=1e-13)
        assert np.allclose(U @ np.diag(s) @ Vt, A, rtol=0, atol=1e-13)
        assert np.allclose(Vt @ Vt.T, np.eye(k), atol=1e-12)


@pytest.mark.parametrize(
    'm,n,r', [(2, 5, 2), (5, 5, 5), (7, 4, 4), (6, 5, 3), (3, 6, 1), (4, 4, 0), (9, 3, 2), (20, 15, 9)]
)
def test_svd_pseudo_inverse_and_projector_rank_deficient(m, n, r):
    A = _rank_matrix(m, n, r)
    eps = 1e-9
    U, s, Vt = la.svd(A)
    rank = la.svd_rank(s, eps)
    assert rank == r
    Ap_ref = sla.pinv(A, atol=eps, rtol=0.0)
    Ap = np.empty((n, m))
    la.svd_pinv(U, s, Vt, rank, Ap)
    assert np.allclose(Ap, Ap_ref, rtol=0, atol=1e-10 * max(1.0, np.abs(Ap_ref).max()))
    b = RNG.standard_normal(m)
    x = np.empty(n)
    la.svd_pinv_apply(U, s, Vt, rank, b, x)
    assert np.allclose(x, Ap_ref @ b, rtol=0, atol=1e-10 * max(1.0, np.abs(Ap_ref @ b).max()))
    P, Ap2, s_out = np.empty((n, n)), np.empty((n, m)), np.empty(min(m, n))
    assert la.svd_projector(A, eps, P, Ap2, s_out) == r
    assert np.allclose(P, np.eye(n) - Ap_ref @ A, atol=1e-10)
    assert np.allclose(P @ P, P, atol=1e-12) and np.allclose(A @ P, 0.0, atol=1e-10)
    assert np.allclose(Ap2, Ap, rtol=0, atol=1e-12 * max(1.0, np.abs(Ap).max()))
    assert np.allclose(s_out, np.linalg.svd(A, compute_uv=False), rtol=0, atol=1e-12)


def test_svd_rank_is_an_absolute_tolerance():
    """A row below eps is dropped whatever the scale of the others (seed 002 semantics)."""
    A = np.array([[2e-7, 1e-7]])
    P, Ap, s = np.empty((2, 2)), np.empty((2, 1)), np.empty(1)
    assert la.svd_projector(A, 1e-6, P, Ap, s) == 0 and np.array_equal(P, np.eye(2))
    assert la.svd_projector(A, 1e-8, P, Ap, s) == 1
    assert la.svd_projector(np.zeros((0, 3)), 1e-6, np.empty((3, 3)), np.empty((3, 0)), np.empty(0)) == 0


def test_not_inlined_copy_computes_what_the_inlined_block_computes():
    """not_inlined gives a called copy (no inline option) of the same Python function: the cross
    product through it, from a compiled caller, equals numpy's, and the copy keeps the other flags."""
    from numba import njit

    called = la.not_inlined(la.cross3)
    assert called.targetoptions.get('inline', 'never') == 'never'
    assert called.py_func is la.cross3.py_func
    assert called.targetoptions['error_model'] == la.cross3.targetoptions['error_model']

    @njit
    def through(f, a, b):
        return np.array(f(a[0], a[1], a[2], b[0], b[1], b[2]))

    a, b = RNG.standard_normal(3), RNG.standard_normal(3)
    np.testing.assert_allclose(through(called, a, b), np.cross(a, b), rtol=0, atol=1e-15)
    np.testing.assert_allclose(through(la.cross3, a, b), np.cross(a, b), rtol=0, atol=1e-15)


def test_general_route_calls_its_small_helpers():
    """The general 2nd-order route calls (does not inline) the 6-vector and 3 x 3 helpers: inlined
    at its many call sites they multiply its compile time (the 6 x 6 route inlines them)."""
    from robot_dynamics.pkm import _general_kernels as G
    from robot_dynamics.pkm import _recursive_kernels as R

    for name in ('_ad6', '_axpy6', '_dot6', '_jp_col', '_ld6', '_st6', 'cross3', 'hat', 'matmul3'):
        f = getattr(G, name)
        assert f.targetoptions.get('inline', 'never') == 'never', name
    assert R._ld6.targetoptions.get('inline') == 'always'

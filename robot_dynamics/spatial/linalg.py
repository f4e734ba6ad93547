"""Compiled small linear algebra: the one set of building blocks every numba kernel uses.

Every function is ``@njit(cache=True, error_model='numpy')``: a division by zero gives inf or
NaN, never an exception (the callers test pivots and return status codes). Arrays are float64
(index arrays int64), C order; ``out`` arguments are written in place and must not alias an
input unless the docstring says so. The 3-vector blocks are inlined into their callers
(``inline='always'``): they are compiled with the caller's flags (e.g. the fast-math of the
PKM kernels), so they compute exactly what the caller's own inline arithmetic would.

* 3-vectors, 3 x 3: :func:`cross3`, :func:`cross`, :func:`dot3`, :func:`matvec3`, :func:`matvec3_tuple`, :func:`matTvec3_tuple`,
  :func:`matTvec3`, :func:`matmul3`, :func:`hat`, :func:`rodrigues`
* matrix products: :func:`matvec`, :func:`matmul` (optionally transposed);
  triangular solve :func:`tri_solve`
* LU with partial (row) pivoting, LAPACK's conventions (``getrf``/``getrs``: unit lower L,
  swap sequence ``piv``, solves in place): :func:`lu_factor`, :func:`lu_solve`,
  :func:`lu_solve_T`, :func:`lu_tri_solve`, :func:`lu_inverse`, :func:`lu_perm`, :func:`solve`
* Cholesky: :func:`chol_factor`, :func:`chol_solve`, :func:`solve_spd`, :func:`is_pd`;
  the tree-sparse L^T D L factorization of a joint-space inertia matrix (no fill-in):
  :func:`ltdl_factor`, :func:`ltdl_solve` and its halves :func:`ltdl_solve_lt`, :func:`ltdl_solve_l`
* Householder QR (column pivoting optional): :func:`householder_qr`, :func:`householder_q`,
  :func:`householder_apply`, :func:`upper_tri_inverse`
* complete orthogonal (URV) decomposition and its pseudo-inverse: :func:`urv`,
  :func:`urv_pinv_apply`, :func:`urv_pinvT_apply`
* SVD and its pseudo-inverse: :func:`jacobi_svd`, :func:`svd`, :func:`svd_rank`,
  :func:`svd_pinv`, :func:`svd_pinv_apply`, :func:`svd_projector`
"""

import numpy as np
from numba import njit

_C = True

#: Below this many columns :func:`svd` uses the one-sided Jacobi SVD (no LAPACK call overhead,
#: small singular values to high relative accuracy); above it LAPACK gesdd.
JACOBI_MAX_N = 12


def not_inlined(fn):
    """A called (not inlined) compiled copy of the ``inline='always'`` function ``fn``.

    The same Python function with ``fn``'s flags, compiled once as a function of its own instead
    of being re-typed and inlined at every call site. For kernels that call a helper in many
    places and gain nothing from inlining it: their compile time drops several-fold.
    """
    opts = {k: v for k, v in fn.targetoptions.items() if k not in ('inline', 'nopython')}
    return njit(cache=_C, **opts)(fn.py_func)


# --------------------------------------------------------------------------- 3-vectors, 3 x 3
@njit(cache=_C, error_model='numpy', inline='always')
def cross3(a0, a1, a2, b0, b1, b2):
    """a x b of two 3-vectors given by their components; returns the 3 components."""
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=_C, error_model='numpy', inline='always')
def cross(a, b, out):
    """out (3,) = a (3,) x b (3,) (out must not alias a or b)."""
    out[0], out[1], out[2] = cross3(a[0], a[1], a[2], b[0], b[1], b[2])


@njit(cache=_C, error_model='numpy', inline='always')
def dot3(a, b):
    """a (3,) . b (3,)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=_C, error_model='numpy', inline='always')
def matvec3_tuple(R, v):
    """R (3, 3) v (3,) as 3 scalars."""
    return dot3(R[0], v), dot3(R[1], v), dot3(R[2], v)


@njit(cache=_C, error_model='numpy', inline='always')
def matTvec3_tuple(R, v):
    """R (3, 3)^T v (3,) as 3 scalars."""
    return dot3(R[:, 0], v), dot3(R[:, 1], v), dot3(R[:, 2], v)


@njit(cache=_C, error_model='numpy', inline='always')
def matvec3(R, v, out):
    """out (3,) = R (3, 3) v (3,) (out must not alias v)."""
    out[0], out[1], out[2] = matvec3_tuple(R, v)


@njit(cache=_C, error_model='numpy', inline='always')
def matTvec3(R, v, out):
    """out (3,) = R (3, 3)^T v (3,) (out must not alias v)."""
    out[0], out[1], out[2] = matTvec3_tuple(R, v)


@njit(cache=_C, error_model='numpy', inline='always')
def matmul3(A, B, out):
    """out (3, 3) = A (3, 3) B (3, 3) (out must not alias A or B)."""
    for a in range(3):
        for b in range(3):
            out[a, b] = A[a, 0] * B[0, b] + A[a, 1] * B[1, b] + A[a, 2] * B[2, b]


@njit(cache=_C, error_model='numpy', inline='always')
def hat(w, W):
    """W (3, 3) = the skew matrix of w (3,): ``W v = w x v``."""
    W[0, 0] = 0.0
    W[0, 1] = -w[2]
    W[0, 2] = w[1]
    W[1, 0] = w[2]
    W[1, 1] = 0.0
    W[1, 2] = -w[0]
    W[2, 0] = -w[1]
    W[2, 1] = w[0]
    W[2, 2] = 0.0


@njit(cache=_C, error_model='numpy', inline='always')
def rodrigues(w0, w1, w2, c, s):
    """exp(w^ t) = I + s w^ + (1 - c) w^2 for a unit axis w, c = cos t, s = sin t: the 9 entries,
    row-major."""
    u = 1.0 - c
    return (
        c + u * w0 * w0,
        u * w0 * w1 - s * w2,
        u * w0 * w2 + s * w1,
        u * w0 * w1 + s * w2,
        c + u * w1 * w1,
        u * w1 * w2 - s * w0,
        u * w0 * w2 - s * w1,
        u * w1 * w2 + s * w0,
        c + u * w2 * w2,
    )


# --------------------------------------------------------------------------- matrix products
@njit(cache=_C, error_model='numpy')
def matvec(A, x, out, m, k, trans):
    """out[:m] = A[:m, :k] x[:k], or with ``trans`` out[:k] = A[:m, :k]^T x[:m]."""
    rows, cols = (k, m) if trans else (m, k)
    for a in range(rows):
        acc = 0.0
        for c in range(cols):
            acc += (A[c, a] if trans else A[a, c]) * x[c]
        out[a] = acc


@njit(cache=_C, error_model='numpy')
def matmul(A, B, out, trans):
    """out (m, p) = A (m, k) B (k, p), or with ``trans`` out = A (k, m)^T B (k, p) (out must
    not alias A or B)."""
    m, p = out.shape
    k = B.shape[0]
    for a in range(m):
        for b in range(p):
            acc = 0.0
            for c in range(k):
                acc += (A[c, a] if trans else A[a, c]) * B[c, b]
            out[a, b] = acc


# --------------------------------------------------------------------------- LU
@njit(cache=_C, error_model='numpy')
def lu_factor(A, m, n, piv):
    """LU with partial (row) pivoting of the block A[:m, :n] (m >= n), in place (LAPACK getrf).

    ``P A = L U``: L unit lower triangular (m, n) below the diagonal, U upper triangular in the
    first n rows; piv (n,) int64 the swap sequence (row k was exchanged with row piv[k] >= k at
    step k, whole rows of the block). A column whose pivot is 0 is left (U_kk = 0). Returns
    (dmin, dmax, sign): the smallest and largest |U_kk| (dmin NaN if a pivot is NaN) and the
    sign of det A for square A (0.0 if a pivot is 0).
    """
    dmin = np.inf
    dmax = 0.0
    sign = 1.0
    for k in range(n):
        p = k
        best = abs(A[k, k])
        for r in range(k + 1, m):
            if abs(A[r, k]) > best:
                best = abs(A[r, k])
                p = r
        piv[k] = p
        if p != k:
            sign = -sign
            for c in range(n):
                t = A[k, c]
                A[k, c] = A[p, c]
                A[p, c] = t
        if best < dmin or best != best:
            dmin = best
        if best > dmax:
            dmax = best
        if best == 0.0:
            sign = 0.0
            continue
        if A[k, k] < 0.0:
            sign = -sign
        inv = 1.0 / A[k, k]
        for r in range(k + 1, m):
            f = A[r, k] * inv
            A[r, k] = f
            if f != 0.0:
                for c in range(k + 1, n):
                    A[r, c] -= f * A[k, c]
    return dmin, dmax, sign


@njit(cache=_C, error_model='numpy')
def lu_perm(piv, m, perm):
    """perm (m,) = the row order of :func:`lu_factor`'s ``P A``: row k of P A is row perm[k]
    of A."""
    for r in range(m):
        perm[r] = r
    _swap_rows(perm, piv, True)


@njit(cache=_C, error_model='numpy')
def tri_solve(T, b, n, lower, trans, unit):
    """Solve op(T) x = b in place on b (x into b) with the lower (``lower``) or upper triangle of
    T[:n, :n]; op(T) = T^T if ``trans``; the diagonal taken as 1 if ``unit``. Forward
    substitution when op(T) is lower triangular, backward when it is upper."""
    forward = lower != trans
    for k in range(n):
        i = k if forward else n - 1 - k
        lo, hi = (0, i) if forward else (i + 1, n)
        s = b[i]
        for c in range(lo, hi):
            s -= (T[c, i] if trans else T[i, c]) * b[c]
        b[i] = s if unit else s / T[i, i]


@njit(cache=_C, error_model='numpy')
def lu_tri_solve(LU, b, n, trans):
    """b[:n] <- U^-1 L^-1 b, or with ``trans`` L^-T U^-T b, in place: the triangular solves
    with the unit lower L and the upper U in LU[:n, :n] (of :func:`lu_factor`; no permutation)."""
    if trans:
        tri_solve(LU, b, n, False, True, False)
        tri_solve(LU, b, n, True, True, True)
    else:
        tri_solve(LU, b, n, True, False, True)
        tri_solve(LU, b, n, False, False, False)


@njit(cache=_C, error_model='numpy')
def _swap_rows(b, piv, forward):
    """Apply the swap sequence piv (of :func:`lu_factor`) to b (forward: P b, else P^T b)."""
    n = piv.shape[0]
    for k in range(n):
        j = k if forward else n - 1 - k
        p = piv[j]
        if p != j:
            t = b[j]
            b[j] = b[p]
            b[p] = t


@njit(cache=_C, error_model='numpy')
def lu_solve(LU, piv, b):
    """Solve A x = b in place on b (x into b) with the factors of :func:`lu_factor` of the
    square A (n, n) = LU[:n, :n], n = piv.shape[0]; for a block factored with m > n rows, b has m
    entries and the first n of the result are ``U^-1 L1^-1 (P b)[:n]``."""
    _swap_rows(b, piv, True)
    lu_tri_solve(LU, b, piv.shape[0], False)


@njit(cache=_C, error_model='numpy')
def lu_solve_T(LU, piv, b):
    """Solve A^T x = b in place on b (factors of :func:`lu_factor` of the square A (n, n),
    n = piv.shape[0])."""
    # A = P^T L U  ->  A^T = U^T L^T P: U^T y = b, L^T z = y, x = P^T z
    lu_tri_solve(LU, b, piv.shape[0], True)
    _swap_rows(b, piv, False)


@njit(cache=_C, error_model='numpy')
def lu_inverse(LU, piv, Ai):
    """Ai (n, n) = A^-1 from the factors of :func:`lu_factor` of the square A (all right-hand
    sides at once: the inner loops run over the columns of the identity)."""
    n = piv.shape[0]
    for r in range(n):
        for c in range(n):
            Ai[r, c] = 1.0 if r == c else 0.0
    for k in range(n):
        p = piv[k]
        if p != k:
            for c in range(n):
                t = Ai[k, c]
                Ai[k, c] = Ai[p, c]
                Ai[p, c] = t
    for r in range(n):
        for k in range(r):
            f = LU[r, k]
            for c in range(n):
                Ai[r, c] -= f * Ai[k, c]
    for r in range(n - 1, -1, -1):
        for k in range(r + 1, n):
            f = LU[r, k]
            for c in range(n):
                Ai[r, c] -= f * Ai[k, c]
        f = 1.0 / LU[r, r]
        for c in range(n):
            Ai[r, c] *= f


@njit(cache=_C, error_model='numpy')
def solve(A, b, x):
    """x (n,) = A^-1 b for a square A (n, n) by LU with partial pivoting (A and b are not
    modified; x may alias b). Returns False if a pivot is exactly 0 (or not finite)."""
    n = A.shape[0]
    LU = A.copy()
    piv = np.empty(n, dtype=np.int64)
    dmin, dmax, sign = lu_factor(LU, n, n, piv)
    if not (dmin > 0.0 and dmax < np.inf):
        return False
    for i in range(n):
        x[i] = b[i]
    lu_solve(LU, piv, x)
    return True


# --------------------------------------------------------------------------- Cholesky
@njit(cache=_C, error_model='numpy')
def chol_factor(Mat, L, tol):
    """Lower Cholesky factor of the symmetric Mat (n, n) into L (L may be Mat itself: in
    place). Only the lower triangle of Mat is read (and of L written).

    Returns -1, or the index of the first pivot that is not > tol (Mat not positive definite
    at that tolerance).
    """
    n = Mat.shape[0]
    for j in range(n):
        s = Mat[j, j]
        for c in range(j):
            s -= L[j, c] * L[j, c]
        if not s > tol:
            return j
        d = np.sqrt(s)
        L[j, j] = d
        for r in range(j + 1, n):
            s2 = Mat[r, j]
            for c in range(j):
                s2 -= L[r, c] * L[j, c]
            L[r, j] = s2 / d
    return -1


@njit(cache=_C, error_model='numpy')
def chol_solve(L, rhs, out):
    """Solve L L^T out = rhs (n,) (forward and back substitution with the factor of
    :func:`chol_factor`; out may alias rhs)."""
    n = L.shape[0]
    for i in range(n):
        out[i] = rhs[i]
    tri_solve(L, out, n, True, False, False)
    tri_solve(L, out, n, True, True, False)


@njit(cache=_C, error_model='numpy')
def solve_spd(Mat, rhs, out):
    """out (n,) = Mat^-1 rhs by Cholesky (Mat (n, n) symmetric, not modified). Returns False
    if Mat is not positive definite (a pivot <= 0)."""
    n = Mat.shape[0]
    L = np.zeros((n, n))
    if chol_factor(Mat, L, 0.0) >= 0:
        return False
    chol_solve(L, rhs, out)
    return True


@njit(cache=_C, error_model='numpy')
def is_pd(Mat, rel_tol):
    """Cholesky test of positive definiteness of the symmetric Mat (n, n): every pivot
    > rel_tol * max(diag Mat)."""
    n = Mat.shape[0]
    scale = 0.0
    for j in range(n):
        if Mat[j, j] > scale:
            scale = Mat[j, j]
    return chol_factor(Mat, np.zeros((n, n)), rel_tol * max(scale, 1e-300)) < 0


# --------------------------------------------------------------------------- tree-sparse LTDL
@njit(cache=_C, error_model='numpy')
def ltdl_factor(H, par, tol):
    """In place ``H = L^T D L`` of a joint-space inertia matrix H (n, n) (Featherstone,
    *Rigid Body Dynamics Algorithms*, sec. 6.5): with ``par`` (n,) the parent of each coordinate
    (``par[i] < i``, -1 for the root), H[i, j] is zero unless one of i, j is an ancestor of the
    other, and L (unit lower triangular) has the same pattern: no fill-in, O(n d^2) for depth d.
    Reads and writes the lower triangle (H[k, i], i an ancestor of k): D on the diagonal, L below.

    Returns -1, or the first index (from the leaves) whose pivot D[k] is not > tol.
    """
    n = H.shape[0]
    for k in range(n - 1, -1, -1):
        d = H[k, k]
        if not d > tol:
            return k
        i = par[k]
        while i >= 0:
            a = H[k, i] / d
            j = i
            while j >= 0:
                H[i, j] -= a * H[k, j]
                j = par[j]
            H[k, i] = a
            i = par[i]
    return -1


@njit(cache=_C, error_model='numpy')
def ltdl_solve(H, par, rhs, out):
    """Solve ``L^T D L out = rhs`` with the factors of :func:`ltdl_factor` (out may alias rhs)."""
    n = H.shape[0]
    for i in range(n):
        out[i] = rhs[i]
    for i in range(n - 1, -1, -1):  # L^T y = rhs
        j = par[i]
        while j >= 0:
            out[j] -= H[i, j] * out[i]
            j = par[j]
    for i in range(n):
        out[i] /= H[i, i]
    for i in range(n):  # L x = D^-1 y
        j = par[i]
        while j >= 0:
            out[i] -= H[i, j] * out[j]
            j = par[j]


@njit(cache=_C, error_model='numpy')
def ltdl_solve_lt(H, par, x):
    """x <- L^-T x in place (the first half of :func:`ltdl_solve`, factors of
    :func:`ltdl_factor`). Zero entries are skipped: for x supported on a set of coordinates
    closed under ancestors (e.g. a row of a loop Jacobian) the result keeps that support and the
    cost is O(|support| d)."""
    n = H.shape[0]
    for i in range(n - 1, -1, -1):
        xi = x[i]
        if xi == 0.0:
            continue
        j = par[i]
        while j >= 0:
            x[j] -= H[i, j] * xi
            j = par[j]


@njit(cache=_C, error_model='numpy')
def ltdl_solve_l(H, par, x):
    """x <- L^-1 x in place (the last half of :func:`ltdl_solve`, factors of :func:`ltdl_factor`)."""
    n = H.shape[0]
    for i in range(n):
        acc = x[i]
        j = par[i]
        while j >= 0:
            acc -= H[i, j] * x[j]
            j = par[j]
        x[i] = acc


# --------------------------------------------------------------------------- Householder QR
@njit(cache=_C, error_model='numpy')
def householder_qr(W, m, n, pivot, drop, piv, V, beta, rdiag):
    """Householder QR of the matrix B (n, m) whose columns are the rows W[:m, :n] (rows are
    the contiguous vectors the reflectors act on), in place: ``B Pi = Q R``.

    ``pivot``: column pivoting (the remaining column of largest norm first; piv (m,) int64
    receives the column order, the rows of W are exchanged with it), else piv is the identity.
    The factorisation stops at the first step whose remaining columns all have norm <= drop
    (``drop < 0``: never). After r steps (the return value): row j of W holds column j of R
    in W[j, :min(j + 1, r)] (R[k, j] = W[j, k], k <= j; R[k, k] = rdiag[k]) and, for j >= r, the
    not-factored part in W[j, r:]; reflector k is ``H_k = I - beta[k] v v^T`` with v = V[k, k:n]
    (V (min(m, n), n), beta, rdiag (min(m, n),)); Q = H_0 ... H_{r-1}.
    """
    for i in range(m):
        piv[i] = i
    kk = min(m, n)
    r = 0
    for k in range(kk):
        jb = k
        if pivot:
            best = -1.0
            for j in range(k, m):
                s = 0.0
                for a in range(k, n):
                    s += W[j, a] * W[j, a]
                if s > best:
                    best = s
                    jb = j
        else:
            best = 0.0
            for a in range(k, n):
                best += W[k, a] * W[k, a]
        nrm = np.sqrt(best)
        if nrm <= drop:
            break
        if jb != k:
            for a in range(n):
                t = W[k, a]
                W[k, a] = W[jb, a]
                W[jb, a] = t
            t2 = piv[k]
            piv[k] = piv[jb]
            piv[jb] = t2
        xk = W[k, k]
        alpha = -nrm if xk >= 0.0 else nrm
        for a in range(k, n):
            V[k, a] = W[k, a]
        V[k, k] = xk - alpha
        b = 1.0 / (nrm * (nrm + abs(xk))) if nrm > 0.0 else 0.0
        beta[k] = b
        rdiag[k] = alpha
        for j in range(k + 1, m):
            _reflect(V[k], b, W[j], k, n)
        W[k, k] = alpha
        for a in range(k + 1, n):
            W[k, a] = 0.0
        r += 1
    return r


@njit(cache=_C, error_model='numpy')
def householder_q(V, beta, r, QT):
    """QT (k, n) = the first k rows of Q^T = (H_0 ... H_{r-1})^T (reflectors of
    :func:`householder_qr`, n = QT.shape[1]): k = n the full Q^T, k = r the thin one (the
    rows of QT are the columns of Q)."""
    k, n = QT.shape
    for a in range(k):
        for c in range(n):
            QT[a, c] = 1.0 if a == c else 0.0
    # QT <- QT H_j backward; rows a < j are still e_a, which H_j does not change
    for j in range(r - 1, -1, -1):
        for a in range(j, k):
            _reflect(V[j], beta[j], QT[a], j, n)


@njit(cache=_C, error_model='numpy')
def householder_apply(V, beta, r, y, transpose):
    """y[:n] <- Q^T y (``transpose``) or Q y, in place (reflectors of :func:`householder_qr`,
    n = V.shape[1])."""
    n = V.shape[1]
    for i in range(r):
        j = i if transpose else r - 1 - i
        _reflect(V[j], beta[j], y, j, n)


@njit(cache=_C, error_model='numpy', inline='always')
def _reflect(v, b, x, lo, n):
    """x[lo:n] <- (I - b v v^T) x[lo:n] (the Householder reflector v[lo:n], b = 2 / v.v)."""
    s = 0.0
    for a in range(lo, n):
        s += v[a] * x[a]
    s *= b
    for a in range(lo, n):
        x[a] -= s * v[a]


@njit(cache=_C, error_model='numpy')
def upper_tri_inverse(R, Ri, r):
    """Ri[:r, :r] = R[:r, :r]^-1 (upper triangular; the strict lower part of Ri is zeroed).
    Returns the squared Frobenius norm of the inverse (inf if a diagonal entry is 0)."""
    fro = 0.0
    for j in range(r):
        if R[j, j] == 0.0:
            return np.inf
        for i in range(j + 1, r):
            Ri[i, j] = 0.0
        Ri[j, j] = 1.0 / R[j, j]
        for i in range(j - 1, -1, -1):
            s = 0.0
            for c in range(i + 1, j + 1):
                s += R[i, c] * Ri[c, j]
            Ri[i, j] = -s / R[i, i]
        for i in range(j + 1):
            fro += Ri[i, j] * Ri[i, j]
    return fro


# --------------------------------------------------------------------------- URV
@njit(cache=_C, error_model='numpy')
def urv(A, Q, Qb, Rbi, piv):
    """Complete orthogonal decomposition of A (m, n) from two Householder QRs:

        A^T Pi = Q [R11 R12; 0 R22]     (column pivoting over the rows of A, r steps: the
                                         remaining rows' norms <= 1e-14 ||A||_F stop it)
        B = [R11 R12]^T = Qb Rb          (thin QR, B is m x r)
        A ~= Pi Qb Rb Q1^T,  A+ = Q1 Rb^-1 Qb^T Pi^T,  N(A) = span Q[:, r:]

    Fills Q (n, n) (Q[:, :r] spans the row space), Qb[:, :r] (m, r), Rbi[:r, :r] = Rb^-1 (upper
    triangular), piv (m,) the row order. Returns (r, rho, s_lb): rho = ||R22||_F the dropped
    part, s_lb = 1 / ||Rb^-1||_F <= sigma_r (0 if Rb is singular; s_lb = inf for r = 0). The
    rank decision of an SVD at the absolute tolerance eps is provably r when
    ``s_lb - rho > eps`` and ``rho <= eps``.
    """
    m, n = A.shape
    W = A.copy()  # row j = column j of A^T Pi (after the swaps)
    tot = 0.0
    for i in range(m):
        for a in range(n):
            tot += W[i, a] * W[i, a]
    kk = min(m, n)
    V = np.zeros((kk, n))
    beta = np.zeros(kk)
    rd = np.zeros(kk)
    r = householder_qr(W, m, n, True, 1e-14 * np.sqrt(tot) + 1e-300, piv, V, beta, rd)
    rho2 = 0.0
    for j in range(r, m):
        for a in range(r, n):
            rho2 += W[j, a] * W[j, a]
    QT = np.empty((n, n))
    householder_q(V, beta, r, QT)
    for a in range(n):
        for c in range(n):
            Q[a, c] = QT[c, a]
    if r == 0:
        return 0, np.sqrt(rho2), np.inf
    # thin QR of B = R1^T (m, r), B[i, c] = W[i, c] for i >= c; as Bt = B^T (r, m), rows contiguous
    Bt = np.zeros((r, m))
    for i in range(m):
        for c in range(min(i + 1, r)):
            Bt[c, i] = W[i, c]
    Vb = np.zeros((r, m))
    bb = np.zeros(r)
    rb = np.zeros(r)
    ib = np.empty(r, dtype=np.int64)
    householder_qr(Bt, r, m, False, -1.0, ib, Vb, bb, rb)
    QbT = np.empty((r, m))
    householder_q(Vb, bb, r, QbT)
    for i in range(m):
        for c in range(r):
            Qb[i, c] = QbT[c, i]
    Rb = np.empty((r, r))  # Rb[i, j] = Bt[j, i], i <= j
    for i in range(r):
        for j in range(r):
            Rb[i, j] = Bt[j, i] if i <= j else 0.0
    fro = upper_tri_inverse(Rb, Rbi, r)
    return r, np.sqrt(rho2), 1.0 / np.sqrt(fro)


@njit(cache=_C, error_model='numpy')
def urv_pinv_apply(Q, Qb, Rbi, piv, r, b, out):
    """out (n,) = A+ b (b (m,)) with the factors of :func:`urv` (rank r)."""
    m = b.shape[0]
    n = Q.shape[0]
    bp = np.empty(m)
    for i in range(m):
        bp[i] = b[piv[i]]
    y = np.empty(r)
    matvec(Qb, bp, y, m, r, True)
    w = np.empty(r)
    matvec(Rbi, y, w, r, r, False)
    matvec(Q, w, out, n, r, False)


@njit(cache=_C, error_model='numpy')
def urv_pinvT_apply(Q, Qb, Rbi, piv, r, F, out):
    """out (m,) = (A+)^T F (F (n,)) with the factors of :func:`urv` (rank r)."""
    m = out.shape[0]
    n = Q.shape[0]
    u = np.empty(r)
    matvec(Q, F, u, n, r, True)
    v = np.empty(r)
    matvec(Rbi, u, v, r, r, True)
    y = np.empty(m)
    matvec(Qb, v, y, m, r, False)
    for i in range(m):
        out[piv[i]] = y[i]


# --------------------------------------------------------------------------- SVD
@njit(cache=_C, error_model='numpy')
def jacobi_svd(A):
    """One-sided (Hestenes) Jacobi SVD of A (m, n): returns (U (m, k), s (k,), Vt (k, n)),
    k = min(m, n), singular values in decreasing order (the reduced SVD)."""
    m, n = A.shape
    W = A.copy()
    V = np.eye(n)
    nrm2 = 0.0
    for k in range(m):
        for i in range(n):
            nrm2 += A[k, i] * A[k, i]
    tiny = 1e-32 * nrm2  # (eps_mach ||A||_F)^2: pairs at roundoff level are left alone
    for sweep in range(60):
        rotated = False
        for i in range(n - 1):
            for j in range(i + 1, n):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for k in range(m):
                    alpha += W[k, i] * W[k, i]
                    beta += W[k, j] * W[k, j]
                    gamma += W[k, i] * W[k, j]
                if abs(gamma) <= tiny or abs(gamma) <= 1e-15 * np.sqrt(alpha * beta):
                    continue
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                if abs(zeta) > 1e150:
                    t = 0.5 / zeta
                else:
                    t = (1.0 if zeta >= 0.0 else -1.0) / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
                c = 1.0 / np.sqrt(1.0 + t * t)
                sn = c * t
                for k in range(m):
                    wi = W[k, i]
                    wj = W[k, j]
                    W[k, i] = c * wi - sn * wj
                    W[k, j] = sn * wi + c * wj
                for k in range(n):
                    vi = V[k, i]
                    vj = V[k, j]
                    V[k, i] = c * vi - sn * vj
                    V[k, j] = sn * vi + c * vj
        if not rotated:
            break
    sig = np.empty(n)
    for i in range(n):
        acc = 0.0
        for k in range(m):
            acc += W[k, i] * W[k, i]
        sig[i] = np.sqrt(acc)
    order = np.argsort(-sig)
    kk = min(m, n)
    U = np.zeros((m, kk))
    s = np.empty(kk)
    Vt = np.empty((kk, n))
    for r in range(kk):
        i = order[r]
        s[r] = sig[i]
        for k in range(n):
            Vt[r, k] = V[k, i]
        if sig[i] > 0.0:
            for k in range(m):
                U[k, r] = W[k, i] / sig[i]
    return U, s, Vt


@njit(cache=_C, error_model='numpy')
def svd(A):
    """Reduced SVD (U (m, k), s (k,), Vt (k, n)) of A (m, n), k = min(m, n), s decreasing:
    :func:`jacobi_svd` up to :data:`JACOBI_MAX_N` columns, LAPACK gesdd above."""
    m, n = A.shape
    if n <= JACOBI_MAX_N:
        return jacobi_svd(A)
    U, s, Vt = np.linalg.svd(A, False)
    return U, s, Vt


@njit(cache=_C, error_model='numpy')
def svd_rank(s, tol):
    """Number of singular values s (decreasing) above the absolute tolerance tol."""
    r = 0
    for i in range(s.shape[0]):
        if s[i] > tol:
            r += 1
    return r


@njit(cache=_C, error_model='numpy')
def svd_pinv(U, s, Vt, r, Ap):
    """Ap (n, m) = A+ = V1 S1^-1 U1^T from the SVD of A (m, n), the first r triplets."""
    n = Vt.shape[1]
    m = U.shape[0]
    for a in range(n):
        for j in range(m):
            acc = 0.0
            for i in range(r):
                acc += Vt[i, a] * U[j, i] / s[i]
            Ap[a, j] = acc


@njit(cache=_C, error_model='numpy')
def svd_pinv_apply(U, s, Vt, r, b, out):
    """out (n,) = A+ b = Vt[:r].T ((U[:, :r].T b) / s[:r]) (b (m,)), the first r triplets."""
    m = U.shape[0]
    n = Vt.shape[1]
    for c in range(n):
        out[c] = 0.0
    for i in range(r):
        acc = 0.0
        for j in range(m):
            acc += U[j, i] * b[j]
        acc /= s[i]
        for c in range(n):
            out[c] += Vt[i, c] * acc


@njit(cache=_C, error_model='numpy')
def svd_projector(A, eps, P, Ap, s_out):
    """SVD of A (m, n) with the absolute rank tolerance eps: fills the null-space projector
    P (n, n) = I - V1 V1^T, A+ (n, m) = V1 S1^-1 U1^T and the singular values s_out
    (min(m, n),); returns the rank r. Only the triplets above eps enter, so the reduced SVD
    suffices for every shape (m = 0 gives P = I)."""
    m, n = A.shape
    for a in range(n):
        for b in range(n):
            P[a, b] = 1.0 if a == b else 0.0
    if m == 0:
        return 0
    U, s, Vt = svd(A)
    for i in range(s.shape[0]):
        s_out[i] = s[i]
    r = svd_rank(s, eps)
    for i in range(r):
        for a in range(n):
            va = Vt[i, a]
            for b in range(n):
                P[a, b] -= va * Vt[i, b]
    svd_pinv(U, s, Vt, r, Ap)
    return r

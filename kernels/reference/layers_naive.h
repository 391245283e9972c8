#pragma once
// Naive references for the token-wise layers, templated on the scalar type (tests run them in double). Plain loops
// that follow the textbook formulas; backward functions return fresh gradients (no accumulation).
#include <cmath>
#include <cstdint>
#include <vector>

namespace trident::reference {

template <class T>
using Vec = std::vector<T>;

// ---- layernorm: x (N, C), w, b (C) ----
template <class T>
Vec<T> layernorm_forward(const Vec<T>& x, const Vec<T>& w, const Vec<T>& b, int64_t N, int C, T eps = T(1e-5)) {
  Vec<T> y(x.size());
  for (int64_t t = 0; t < N; ++t) {
    T mean = 0, var = 0;
    for (int i = 0; i < C; ++i) mean += x[t * C + i];
    mean /= C;
    for (int i = 0; i < C; ++i) var += (x[t * C + i] - mean) * (x[t * C + i] - mean);
    var /= C;
    for (int i = 0; i < C; ++i) y[t * C + i] = (x[t * C + i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  }
  return y;
}

template <class T>
struct LayernormGrads {
  Vec<T> dx, dw, db;
};

template <class T>
LayernormGrads<T> layernorm_backward(const Vec<T>& dy, const Vec<T>& x, const Vec<T>& w, int64_t N, int C,
                                     T eps = T(1e-5)) {
  LayernormGrads<T> g{Vec<T>(x.size()), Vec<T>(C), Vec<T>(C)};
  for (int64_t t = 0; t < N; ++t) {
    T mean = 0, var = 0;
    for (int i = 0; i < C; ++i) mean += x[t * C + i];
    mean /= C;
    for (int i = 0; i < C; ++i) var += (x[t * C + i] - mean) * (x[t * C + i] - mean);
    var /= C;
    T rstd = T(1) / std::sqrt(var + eps);
    // dx_i = rstd * (g_i - mean_j g_j - xhat_i * mean_j g_j xhat_j), g = dy * w
    T g_mean = 0, gx_mean = 0;
    for (int i = 0; i < C; ++i) {
      T xhat = (x[t * C + i] - mean) * rstd;
      g_mean += dy[t * C + i] * w[i] / C;
      gx_mean += dy[t * C + i] * w[i] * xhat / C;
      g.dw[i] += dy[t * C + i] * xhat;
      g.db[i] += dy[t * C + i];
    }
    for (int i = 0; i < C; ++i) {
      T xhat = (x[t * C + i] - mean) * rstd;
      g.dx[t * C + i] = rstd * (dy[t * C + i] * w[i] - g_mean - xhat * gx_mean);
    }
  }
  return g;
}

// ---- RMSNorm without weight over rows of D, optionally gated: y = x / sqrt(mean(x^2) + eps) * gate ----
// gate nullptr: no gate.
template <class T>
Vec<T> rmsnorm_forward(const Vec<T>& x, int64_t rows, int D, const Vec<T>* gate = nullptr, T eps = T(1e-5)) {
  Vec<T> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    T ms = 0;
    for (int i = 0; i < D; ++i) ms += x[r * D + i] * x[r * D + i] / D;
    for (int i = 0; i < D; ++i)
      y[r * D + i] = x[r * D + i] / std::sqrt(ms + eps) * (gate ? (*gate)[r * D + i] : T(1));
  }
  return y;
}

template <class T>
struct RmsnormGrads {
  Vec<T> dx, dgate;  // dgate empty without a gate
};

// With g = dy * gate (the gradient of the normalised row xhat = x * inv):
//   dx = inv * g - inv^3 * x * sum(g * x) / D,  dgate = dy * xhat
template <class T>
RmsnormGrads<T> rmsnorm_backward(const Vec<T>& dy, const Vec<T>& x, int64_t rows, int D,
                                 const Vec<T>* gate = nullptr, T eps = T(1e-5)) {
  RmsnormGrads<T> grads{Vec<T>(x.size()), gate ? Vec<T>(x.size()) : Vec<T>()};
  for (int64_t r = 0; r < rows; ++r) {
    T ms = 0, dot = 0;
    for (int i = 0; i < D; ++i) {
      const T g = dy[r * D + i] * (gate ? (*gate)[r * D + i] : T(1));
      ms += x[r * D + i] * x[r * D + i] / D;
      dot += g * x[r * D + i];
    }
    T inv = T(1) / std::sqrt(ms + eps);
    for (int i = 0; i < D; ++i) {
      const T g = dy[r * D + i] * (gate ? (*gate)[r * D + i] : T(1));
      grads.dx[r * D + i] = inv * g - inv * inv * inv * x[r * D + i] * dot / D;
      if (gate) grads.dgate[r * D + i] = dy[r * D + i] * x[r * D + i] * inv;
    }
  }
  return grads;
}

// ---- linear: x (N, C), w (C, OC), b (OC) ----
template <class T>
Vec<T> linear_forward(const Vec<T>& x, const Vec<T>& w, const Vec<T>* b, int64_t N, int C, int OC) {
  Vec<T> y(static_cast<std::size_t>(N) * OC);
  for (int64_t t = 0; t < N; ++t)
    for (int o = 0; o < OC; ++o) {
      T acc = b ? (*b)[o] : T(0);
      for (int i = 0; i < C; ++i) acc += x[t * C + i] * w[static_cast<int64_t>(i) * OC + o];
      y[t * OC + o] = acc;
    }
  return y;
}

template <class T>
struct LinearGrads {
  Vec<T> dx, dw, db;
};

template <class T>
LinearGrads<T> linear_backward(const Vec<T>& dy, const Vec<T>& x, const Vec<T>& w, int64_t N, int C, int OC) {
  LinearGrads<T> g{Vec<T>(x.size()), Vec<T>(w.size()), Vec<T>(OC)};
  for (int64_t t = 0; t < N; ++t)
    for (int o = 0; o < OC; ++o) {
      T d = dy[t * OC + o];
      g.db[o] += d;
      for (int i = 0; i < C; ++i) {
        g.dx[t * C + i] += d * w[static_cast<int64_t>(i) * OC + o];
        g.dw[static_cast<int64_t>(i) * OC + o] += d * x[t * C + i];
      }
    }
  return g;
}

// ---- embedding: wte (V, C), wpe (P, C) ----
template <class T>
Vec<T> embedding_forward(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions, const Vec<T>& wte,
                         const Vec<T>* wpe, int C) {
  Vec<T> y(tokens.size() * C);
  for (std::size_t t = 0; t < tokens.size(); ++t)
    for (int i = 0; i < C; ++i)
      y[t * C + i] = wte[tokens[t] * C + i] + (wpe ? (*wpe)[positions[t] * C + i] : T(0));
  return y;
}

// ---- cross-entropy: logits (N, V); target -1 = no target ----
template <class T>
Vec<T> crossentropy_forward(const Vec<T>& logits, const std::vector<int32_t>& targets, int V) {
  Vec<T> loss(targets.size());
  for (std::size_t t = 0; t < targets.size(); ++t) {
    if (targets[t] < 0) continue;
    T sum = 0;
    for (int i = 0; i < V; ++i) sum += std::exp(logits[t * V + i]);
    loss[t] = std::log(sum) - logits[t * V + targets[t]];
  }
  return loss;
}

// gradient of sum_t weight[t] * loss[t] with respect to the logits
template <class T>
Vec<T> crossentropy_backward(const Vec<T>& logits, const std::vector<int32_t>& targets, const Vec<T>& weight, int V) {
  Vec<T> d(logits.size());
  for (std::size_t t = 0; t < targets.size(); ++t) {
    if (targets[t] < 0) continue;
    T sum = 0;
    for (int i = 0; i < V; ++i) sum += std::exp(logits[t * V + i]);
    for (int i = 0; i < V; ++i) d[t * V + i] = weight[t] * (std::exp(logits[t * V + i]) / sum - (i == targets[t]));
  }
  return d;
}

// ---- AdamW, one step on every element, as torch.optim.AdamW ----
template <class T>
void adamw_step(Vec<T>& p, const Vec<T>& g, Vec<T>& m, Vec<T>& v, T lr, T b1, T b2, T eps, T wd, int64_t step) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] *= T(1) - lr * wd;
    m[i] = b1 * m[i] + (T(1) - b1) * g[i];
    v[i] = b2 * v[i] + (T(1) - b2) * g[i] * g[i];
    T m_hat = m[i] / (T(1) - std::pow(b1, T(step)));
    T v_hat = v[i] / (T(1) - std::pow(b2, T(step)));
    p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

}  // namespace trident::reference

-- expect: pass
-- stub: noheartbeats
import Mathlib

theorem nohb_target (x : ℝ) (hx : 0 < x) : 0 < x ^ 2 := by
  nlinarith [sq_nonneg x, mul_pos hx hx]

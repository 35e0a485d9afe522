-- expect: pass
-- stub: noheartbeats
import Mathlib

set_option maxHeartbeats 100000 in
theorem nohb_target (x : ℝ) (hx : 0 < x) : 0 < x ^ 2 := by
  positivity

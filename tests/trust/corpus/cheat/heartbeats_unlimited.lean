-- expect: heartbeats_override
-- stub: noheartbeats
import Mathlib

set_option maxHeartbeats 0

theorem nohb_target (x : ℝ) (hx : 0 < x) : 0 < x ^ 2 := by
  positivity

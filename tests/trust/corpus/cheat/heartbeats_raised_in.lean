-- expect: heartbeats_override
-- stub: noheartbeats
import Mathlib

theorem nohb_target (x : ℝ) (hx : 0 < x) : 0 < x ^ 2 := by
  set_option maxHeartbeats 100000000 in
  positivity

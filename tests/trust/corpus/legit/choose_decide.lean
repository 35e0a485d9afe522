-- expect: pass
-- stub: choose
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

theorem corpus_choose : choose 5 2 = 10 := by
  decide

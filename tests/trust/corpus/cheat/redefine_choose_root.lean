-- expect: redefines_statement_name
-- stub: choose
import Mathlib
import Aesop

set_option maxHeartbeats 0

def choose (n k : ℕ) : ℕ := 10

open BigOperators Real Nat Topology Rat

theorem corpus_choose : choose 5 2 = 10 := by
  rfl

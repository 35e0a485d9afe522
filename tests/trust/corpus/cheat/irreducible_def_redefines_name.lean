-- expect: redefines_statement_name
-- stub: choose
import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

-- an irreducible_def is a definition too: it may not take a name the statement uses
irreducible_def choose (n k : ℕ) : ℕ := 10

theorem corpus_choose : choose 5 2 = 10 := by
  rfl

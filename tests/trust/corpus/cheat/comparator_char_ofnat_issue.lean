-- expect: prelude
-- stub: comparator_zero_eq_one
prelude
import Init.Prelude

-- a prelude-level redefinition of a core type the kernel treats specially
structure Char' where
  val : UInt32

theorem zero_eq_one : 0 = 1 := by
  sorry

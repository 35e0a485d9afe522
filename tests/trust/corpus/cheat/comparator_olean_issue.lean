-- expect: implemented_by
-- stub: comparator_zero_eq_one
import Lean
open Lean Elab Command

def realVal : Nat := 0
@[implemented_by realVal] def fakeVal : Nat := 1

run_elab addDecl (.defnDecl { name := `bogus, levelParams := [], type := mkConst ``Nat, value := mkNatLit 1, hints := .abbrev, safety := .safe })

theorem zero_eq_one : 0 = 1 := by
  decide

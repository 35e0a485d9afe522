-- expect: eval_command
-- stub: comparator_zero_eq_one
import Lean

open Lean Elab Term Meta

run_elab
  withOptions (fun o => o.setBool `debug.skipKernelTC true) <|
    addDecl <| .thmDecl {
      name        := `zero_eq_one
      levelParams := []
      type        := mkApp3 (.const ``Eq [1]) (.const ``Nat []) (mkNatLit 0) (mkNatLit 1)
      value       := mkApp2 (.const ``Eq.refl [1]) (.const ``Nat []) (mkNatLit 0)
    }

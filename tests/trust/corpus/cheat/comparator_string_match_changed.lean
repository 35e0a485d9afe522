-- expect: prerequisite_changed
-- stub: comparator_string_match
def strTag (s : String) : Nat :=
  match s with
  | "dead" => 1
  | _ => 1

theorem strTag_live : strTag "live" = 1 := rfl

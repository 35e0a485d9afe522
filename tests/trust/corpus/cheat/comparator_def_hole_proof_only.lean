-- expect: prerequisite_changed
-- stub: comparator_def_hole
-- The hole `n` gets a value through a constant absent from the challenge.
def evilConst : Nat := 42

def n : Nat := evilConst

theorem foo : 0 = 0 := rfl

-- expect: pass
-- stub: comparator_theorem_hole
theorem hex : ∃ x : Nat, x = 0 := ⟨0, rfl⟩

def w : Nat := Classical.choose hex

theorem hw : w = 0 := Classical.choose_spec hex

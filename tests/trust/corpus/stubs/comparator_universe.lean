universe u_1

theorem sameType (α : Type u_1) : α = α := by
  sorry

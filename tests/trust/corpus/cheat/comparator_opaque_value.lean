-- expect: new_axiom
-- stub: comparator_false
axiom f : False
opaque v : False := f
theorem boom : False := f

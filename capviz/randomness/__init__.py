"""What a capture does about NumPy's own randomness: the hooks on seeding and drawing, the
watch on generator objects, and NumPy's global draws recorded as random ops."""

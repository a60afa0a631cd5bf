-- Reports (1 or 0) whether a force-release freed ARGV[1]'s hold of the
-- name and its lease has not ended yet (its mark in KEYS[1], taken.lua):
-- asked after a release found nothing of the owner, so that the release is
-- answered taken over, as a renewal is.
if tk_told(KEYS[1], ARGV[1]) then
  return 1
end
return 0

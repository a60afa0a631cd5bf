-- A hold's release ids (engine.ReleaseIDs): rs, the ids of the last 8
-- releases that counted the hold down (engine.KeptReleaseIDs), oldest
-- first; r, one id, as versions before them wrote it.

-- released reports whether a release with id was applied to the hold h.
local function released(h, id)
  if h.r == id then
    return true
  end
  for _, x in ipairs(h.rs or {}) do
    if x == id then
      return true
    end
  end
  return false
end

-- noteRelease records id as the hold h's newest release id.
local function noteRelease(h, id)
  local rs = h.rs or {}
  if h.r then
    table.insert(rs, 1, h.r)
    h.r = nil
  end
  table.insert(rs, id)
  while #rs > 8 do
    table.remove(rs, 1)
  end
  h.rs = rs
end

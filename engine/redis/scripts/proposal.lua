-- proposed returns the token the floor argument proposes
-- (engine.AcquireRequest.TokenProposal: a positive number; '' and '0' are
-- none) when it stands in for the clock now (µs), that is when it is above
-- now by at most 1000000 µs (engine.MaxProposalLead); else now. A quorum
-- proposes one token to all its nodes so that they mint the same one.
local function proposed(floor, now)
  local p = tonumber(floor)
  if p and p > now and p - now <= 1000000 then
    return p
  end
  return now
end

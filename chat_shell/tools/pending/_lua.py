"""Lua scripts of the Redis registry: each state change is one atomic server-side step.

A request is one hash `{prefix}:req:{id}` with `user`, `worker`, `state` and, once answered,
`answer`. States: pending -> resolved (answer stored) -> done, or pending -> expired. `done` and
`expired` are tombstones: small, with a short TTL, so late answers get a precise outcome.
"""

from __future__ import annotations

# KEYS[1] request; ARGV user, worker, backstop ms (the TTL every key carries).
REGISTER = """
redis.call('HSET', KEYS[1], 'user', ARGV[1], 'worker', ARGV[2], 'state', 'pending')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS[1] request; ARGV user, answer json, worker channel prefix, request id.
# Stores the answer *before* publishing it: a waiter whose listener missed the message finds
# it when it resubscribes. The answer rides in the message too, saving the waiter a round trip.
RESOLVE = """
local h = redis.call('HMGET', KEYS[1], 'user', 'state', 'worker')
if h[1] ~= ARGV[1] then return 'not_found' end
if h[2] == 'pending' then
  redis.call('HSET', KEYS[1], 'state', 'resolved', 'answer', ARGV[2])
  redis.call('PUBLISH', ARGV[3] .. h[3], ARGV[4] .. ' ' .. ARGV[2])
  return 'resolved'
end
if h[2] == 'expired' then return 'expired' end
return 'already_resolved'
"""

# KEYS[1] request; ARGV tombstone ms, expire flag ('1': a pending request becomes expired).
# Returns a stored answer (and turns it into a `done` tombstone), else nil.
SETTLE = """
local h = redis.call('HMGET', KEYS[1], 'state', 'answer')
if h[1] == 'resolved' then
  redis.call('HSET', KEYS[1], 'state', 'done')
  redis.call('HDEL', KEYS[1], 'answer', 'worker')
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return h[2]
end
if h[1] == 'pending' and ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'state', 'expired')
  redis.call('HDEL', KEYS[1], 'worker')
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return false
"""

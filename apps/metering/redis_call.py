"""The one Redis call a request makes (one atomic script): it takes from the key's bucket (GCRA),
counts the quota, and writes what the request leaves behind (usage counts, its request log
entry, its mark), with what this process gathered since its last call."""

import hashlib
from dataclasses import dataclass
from typing import Any

from apps.common.cache import redis_client

from .pending import NOTED_SECONDS, redis_pending_take, redis_unsettled_add
from .quotas import TOUCHED, QuotaTake, quota_seed
from .records import REDIS_COUNTS, REDIS_REQUESTS
from .standing import WINDOW_SECONDS

# KEYS[1]: the bucket; KEYS[2]: the usage counts and KEYS[3] the request log
# (apps/metering/buffer.py); KEYS[4]: the request's mark ("" for none), set to `a` (noted as
# allowed) or `r` (as refused) for `NOTED_SECONDS`, so that a process whose answer never came
# can ask later whether this call ran (apps/metering/settling.py); KEYS[5] and KEYS[6]: the
# key's quota count for this period and the set of counts changed ("" for no quota,
# apps/metering/quotas.py); KEYS[7], when given: a client address's block, which refuses at
# once while it holds and is set when this bucket refuses.
# ARGV: now, emission interval ("" for no bucket: limits off), window (seconds, as decimal
# strings); the count field of this request if allowed and if refused ("" counts nothing); its
# request log entry ("" logs nothing) and the status it gets if allowed and if refused; how
# many pairs of count field and amount follow; the quota's allowance ("" for none); the pairs,
# then request log items: what this process gathered since its
# last call. Returns {1 allowed or 0 refused, the bucket's arrival time after this request as a
# string (Redis would truncate a Lua number to an integer), the quota's count}; {2, seconds
# left} for a blocked address; {3} when the quota's count is not in Redis (nothing was done:
# the caller rebuilds it and calls again); {4, the count} when the quota is spent.
_GCRA_SCRIPT = """
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[3])
local quota = KEYS[5] ~= ''
local used = 0
if quota then
  local held = redis.call('GET', KEYS[5])
  if not held then return {3, ''} end
  used = tonumber(held)
end
local pairs_end = 10 + 2 * tonumber(ARGV[9])
for i = 11, pairs_end, 2 do redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1]) end
if #ARGV > pairs_end then redis.call('RPUSH', KEYS[3], unpack(ARGV, pairs_end + 1)) end
local function note(field, status, mark)
  if field ~= '' then redis.call('HINCRBY', KEYS[2], field, 1) end
  if ARGV[6] ~= '' then redis.call('RPUSH', KEYS[3], 'P' .. status .. '|' .. ARGV[6]) end
  if KEYS[4] ~= '' then redis.call('SET', KEYS[4], mark, 'EX', {noted}) end
end
if KEYS[7] then
  local left = redis.call('PTTL', KEYS[7])
  if left > 0 then
    note(ARGV[5], ARGV[8], 'r')
    return {2, tostring(left / 1000)}
  end
end
local new_tat, tat, interval = now, now, 0
if ARGV[2] ~= '' then
  interval = tonumber(ARGV[2])
  tat = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
  if tat < now or tat > now + window + interval then tat = now end
end
if quota and used >= tonumber(ARGV[10]) then
  note(ARGV[5], ARGV[8], 'r')
  return {4, tostring(tat), used}
end
if ARGV[2] ~= '' then
  new_tat = tat + interval
  if new_tat - window > now then
    if KEYS[7] then
      local ms = math.ceil((tat + interval - window - now) * 1000)
      redis.call('SET', KEYS[7], '1', 'PX', math.max(ms, 1000))
    end
    note(ARGV[5], ARGV[8], 'r')
    return {0, tostring(tat)}
  end
  redis.call('SET', KEYS[1], tostring(new_tat), 'PX', math.ceil((new_tat - now) * 1000) + 1000)
end
if quota then
  used = redis.call('INCR', KEYS[5])  -- keeps the expiry its rebuild set
  redis.call('SADD', KEYS[6], KEYS[5])
end
note(ARGV[4], ARGV[7], 'a')
return {1, tostring(new_tat), used}
""".replace("{noted}", str(NOTED_SECONDS))


@dataclass(frozen=True)
class LimiterNote:
    """What the limiter's call writes about the request beside taking from its bucket (Redis
    only): the usage count field if allowed and if refused, and the request log entry with the
    status it gets if allowed and if refused ("" for none)."""

    count_allowed: str = ""
    count_refused: str = ""
    log_entry: str = ""
    status_allowed: int = 200
    status_refused: int = 429
    mark: str = ""  # the request's mark in Redis (`noted_key`), set by the same call

    def noted(self, allowed: bool) -> bool:
        return bool(self.count_allowed if allowed else self.count_refused) or bool(self.log_entry)


NOTHING = LimiterNote()

_GCRA_SHA = hashlib.sha1(_GCRA_SCRIPT.encode()).hexdigest()  # noqa: S324 - Redis names it so


def _run(client: Any, *keys_and_args: Any) -> Any:
    """The script by its digest (EVALSHA): its 1.8 KB are not sent, nor hashed by Redis, on
    every request. A Redis that does not know it yet (a restart, a flush) refuses the digest
    without running anything, and is sent the script once."""
    # Imported here: a server without Redis never imports redis-py (nor the OpenTelemetry SDK
    # its observability module pulls in).
    from redis.exceptions import NoScriptError

    try:
        return client.evalsha(_GCRA_SHA, *keys_and_args)
    except NoScriptError:
        return client.eval(_GCRA_SCRIPT, *keys_and_args)


def take_in_redis(
    bucket: str,
    now: float,
    interval: float | None,
    block: str | None,
    note: LimiterNote,
    quota: QuotaTake | None,
) -> tuple[int, float, int]:
    client = redis_client()
    quota_keys = [quota.redis_key, TOUCHED] if quota is not None else ["", ""]
    keys = [f"gatehouse:ratelimit:{bucket}", REDIS_COUNTS, REDIS_REQUESTS, note.mark, *quota_keys]
    if block is not None:
        keys.append(f"gatehouse:block:{block}")
    # What waits rides only on a marked call: if its answer is lost, the mark says if it ran.
    changes, log_items = redis_pending_take() if note.mark else ([], [])
    args: list[str | int] = [
        *(repr(now), "" if interval is None else repr(interval), WINDOW_SECONDS),
        *(note.count_allowed, note.count_refused),
        *(note.log_entry, note.status_allowed, note.status_refused),
        len(changes),
        quota.limit if quota is not None else "",
    ]
    for field, amount in changes:
        args += [field, amount]
    args += log_items
    try:
        answer = _run(client, len(keys), *keys, *args)
        if answer[0] == 3 and quota is not None:  # the period's count is not in Redis: rebuilt
            quota_seed(quota)
            answer = _run(client, len(keys), *keys, *args)
    except Exception:
        if note.mark:  # it may have run before the connection broke: settled later, once
            fields = (note.count_allowed, note.count_refused)
            redis_unsettled_add(note.mark, *fields, changes, log_items)
        raise
    if answer[0] == 3:
        raise RuntimeError("The quota's count vanished from Redis as it was rebuilt.")
    return int(answer[0]), float(answer[1]), int(answer[2]) if len(answer) > 2 else 0

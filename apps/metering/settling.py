"""Settling a request whose limiter call failed when Redis may have run it.

The limiter's one script call per request counts and logs the request in Redis and, in the same
call, sets the request's mark (`gatehouse:noted:<request id>`, `a` or `r` for how it was noted,
kept `NOTED_SECONDS`). When that call fails (Redis killed, a timeout, a reset connection), the
process cannot know whether Redis ran it before the reply was lost: with `appendfsync always`
a script that ran is in Redis's file even if its reply never left. So the process serves the
request from its own bucket and keeps it unsettled (apps/metering/pending.py) with what rode on
the call; once the answer is known and Redis answers again, one script per request reads the
mark and writes exactly one record of it:

- marked `a`/`r`: the call ran. Its count and its `P` entry are in Redis, and what rode on it
  too: the count moves to the answer's outcome if that differs, and the completion follows;
- no mark: the call never ran. What rode on it, the answer's count and the whole entry go in;

and sets the mark to `s` (settled), so that settling the same request again writes nothing (its
own reply may be lost as well). A request unsettled for longer than its mark lives (Redis away
that long) is counted and logged as if its call never ran (`redis_unsettled_give_up`).
"""

import logging
from typing import Any

from .pending import (
    NOTED_SECONDS,
    Unsettled,
    redis_unsettled_restore,
    redis_unsettled_take,
)
from .records import REDIS_COUNTS, REDIS_REQUESTS

logger = logging.getLogger("apps.metering")

# KEYS: the mark, the counts, the request log. ARGV: the count field if noted as allowed and if
# as refused, the answer's count field, its completion item, its whole entry item, how many
# pairs of count field and amount rode on the call, the pairs, then the log items that rode.
_SETTLE = """
local mark = redis.call('GET', KEYS[1])
if mark == 's' then return 2 end
if mark then
  local counted = ARGV[2]
  if mark == 'a' then counted = ARGV[1] end
  if counted ~= ARGV[3] then
    if counted ~= '' then redis.call('HINCRBY', KEYS[2], counted, -1) end
    if ARGV[3] ~= '' then redis.call('HINCRBY', KEYS[2], ARGV[3], 1) end
  end
  if ARGV[4] ~= '' then redis.call('RPUSH', KEYS[3], ARGV[4]) end
else
  local pairs_end = 6 + 2 * tonumber(ARGV[6])
  for i = 7, pairs_end, 2 do redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1]) end
  if #ARGV > pairs_end then redis.call('RPUSH', KEYS[3], unpack(ARGV, pairs_end + 1)) end
  if ARGV[3] ~= '' then redis.call('HINCRBY', KEYS[2], ARGV[3], 1) end
  if ARGV[5] ~= '' then redis.call('RPUSH', KEYS[3], ARGV[5]) end
end
redis.call('SET', KEYS[1], 's', 'EX', {noted})
if mark then return 1 end
return 0
""".replace("{noted}", str(NOTED_SECONDS))


def redis_unsettled_settle(client: Any) -> dict[str, int]:
    """Settle every unsettled request that has its answer, one script call each; how many had
    run in Redis (`ran`), had not (`not_run`) or were settled before (`again`). On a failure
    the rest are given back and the error raised."""
    settled = {"not_run": 0, "ran": 0, "again": 0}
    waiting = redis_unsettled_take()
    for index, unsettled in enumerate(waiting):
        try:
            outcome = int(client.eval(_SETTLE, 3, *_keys(unsettled), *_args(unsettled)))
        except Exception:
            redis_unsettled_restore(waiting[index:])
            raise
        settled[("not_run", "ran", "again")[outcome]] += 1
    if waiting:
        logger.warning(
            "Settled %s requests whose limiter call failed: %s had run in Redis, %s had not, "
            "%s were settled before; each is counted and logged once.",
            len(waiting),
            settled["ran"],
            settled["not_run"],
            settled["again"],
        )
    return settled


def _keys(unsettled: Unsettled) -> list[str]:
    return [unsettled.mark, REDIS_COUNTS, REDIS_REQUESTS]


def _args(unsettled: Unsettled) -> list[str | int]:
    assert unsettled.answered is not None
    final, completion, entry = unsettled.answered
    args: list[str | int] = [unsettled.count_allowed, unsettled.count_refused]
    args += [final, completion, entry, len(unsettled.changes)]
    for field_name, amount in unsettled.changes:
        args += [field_name, amount]
    return args + unsettled.log_items

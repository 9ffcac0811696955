import type { Delivery, WebhookMessage } from "../store/queue.js";

/** How one record went, as the deliverer answers it. */
type Outcome = string;

/** The deliverer's handling of one record; `mayAttempt` false defers it without connecting. */
type Handle = (
  message: WebhookMessage,
  delivery: Delivery,
  mayAttempt: boolean,
) => Promise<Outcome>;

/** Outcomes after which the next record of the same endpoint may still connect. */
const CLEAR: ReadonlySet<Outcome> = new Set(["delivered", "waiting", "dropped"]);

/**
 * The records of one worker invocation, which the batch processor hands over all at once so that
 * each waits only on its own endpoint. Records of one endpoint take turns instead of racing for
 * its lease (the loser would be deferred for nothing): each starts once the one before it ended.
 * A record whose endpoint failed (or was busy elsewhere) earlier in this invocation, or whose
 * turn comes too late to finish an attempt (`leaseMs`) before the invocation's `deadline`, is
 * deferred without connecting. So a hung endpoint costs this invocation one attempt's timeout,
 * never its records' sum, and the invocation ends within its timeout.
 */
export function deliveryTurns(
  handle: Handle,
  leaseMs: number,
  deadline: number,
  now = () => Date.now(),
) {
  const lastTurn = new Map<string, Promise<boolean>>();
  return (message: WebhookMessage, delivery: Delivery): Promise<Outcome> => {
    const endpoint = `${message.workspaceId}#${message.endpointId}`;
    const before = lastTurn.get(endpoint);
    const outcome = (async () => {
      const clear = before === undefined || ((await before) && now() + leaseMs <= deadline);
      return handle(message, delivery, clear);
    })();
    lastTurn.set(
      endpoint,
      outcome.then(
        (o) => CLEAR.has(o),
        () => false,
      ),
    );
    return outcome;
  };
}

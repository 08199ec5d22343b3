/** The events bench:scale loads: type `shop<s>.<kind>` (10 shops × 10 kinds), source `service-<n>` (10). */
const KINDS = ['order', 'payment', 'refund', 'cart', 'login', 'logout', 'search', 'view', 'review', 'ship'];

export const typeOf = (i: number) => `shop${i % 10}.${KINDS[Math.floor(i / 10) % 10]}`;
export const sourceOf = (i: number) => `service-${Math.floor(i / 7) % 10}`;

/** The body of the i-th event, as POST /api/v1/events receives it. */
export function benchEventBody(i: number) {
  return {
    event_type: typeOf(i),
    source: sourceOf(i),
    priority: 1 + (i % 10),
    data: { order_id: i, customer: `c-${i % 1000}`, total: (i % 500) + 0.5 },
  };
}

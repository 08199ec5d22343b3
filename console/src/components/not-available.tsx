/**
 * Shown where the server has no such endpoint (yet): the console is built against the whole interface, and
 * a platform that lacks a module answers its routes with "No route".
 */
export function NotAvailable({ what, endpoint }: { what: string; endpoint?: string | undefined }) {
  return (
    <div class="notice notice-muted" role="status" data-state="not-available">
      <strong>{what}: not available.</strong> This platform does not offer this yet
      {endpoint ? (
        <>
          {' '}
          (no <code>{endpoint}</code>)
        </>
      ) : null}
      .
    </div>
  );
}

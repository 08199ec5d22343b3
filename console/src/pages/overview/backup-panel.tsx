import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { KeyValues } from '../../components/key-values.tsx';
import { Link } from '../../components/link.tsx';
import { formatAgo, formatMb, formatTime } from '../../format.ts';
import type { ApiState } from '../../hooks/use-api.ts';

export interface BackupItem {
  id?: string;
  backup_id?: string;
  created_at: string;
  size_mb: number;
  status: string;
  type?: string;
}

/** The newest backup (GET /api/v1/backup): when, how large, whether it completed; none yet says so. */
export function BackupPanel({ state }: { state: ApiState<{ backups: BackupItem[] }> }) {
  return (
    <section aria-labelledby="backup-title">
      <h2 id="backup-title">Last backup</h2>
      <ApiView state={state} what="Backups" endpoint="GET /api/v1/backup">
        {(d) => {
          const last = [...d.backups].sort((a, b) => b.created_at.localeCompare(a.created_at))[0];
          if (!last)
            return (
              <p data-testid="last-backup">
                <Badge value="warning" /> No backup yet. <Link to="/backups">Create one</Link>
              </p>
            );
          return (
            <KeyValues
              items={[
                ['Taken', <span data-testid="last-backup">{formatAgo(last.created_at)}</span>],
                ['At', formatTime(last.created_at)],
                ['Status', <Badge value={last.status} />],
                ['Size', formatMb(last.size_mb)],
                last.type ? ['Kind', last.type] : null,
              ]}
            />
          );
        }}
      </ApiView>
    </section>
  );
}

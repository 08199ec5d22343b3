import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { TaskProgress } from './task-progress.tsx';

/** One task followed live: progress, steps, result and logs. */
export function TaskDetailPage({ id }: { id: string }) {
  return (
    <Page title="Task" actions={<Link to="/tasks">← Tasks</Link>}>
      <p>
        <code>{id}</code>
      </p>
      <TaskProgress id={id} />
    </Page>
  );
}

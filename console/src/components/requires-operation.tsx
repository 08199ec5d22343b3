import type { ComponentChildren } from 'preact';
import { useOperation } from '../api/operations.ts';
import { NotAvailable } from './not-available.tsx';

/** Shows its children (a form) only when the platform offers the operation they call; else says so. */
export function RequiresOperation({
  operation,
  what,
  children,
}: {
  operation: string;
  what: string;
  children: ComponentChildren;
}) {
  const available = useOperation(operation);
  if (!available) return <NotAvailable what={what} endpoint={operation} />;
  return <>{children}</>;
}

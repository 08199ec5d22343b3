import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';

/** A page's heading, its actions, and the document title that goes with it. */
export function Page({
  title,
  actions,
  children,
}: {
  title: string;
  actions?: ComponentChildren;
  children: ComponentChildren;
}) {
  useEffect(() => {
    document.title = `${title} · Platform console`;
  }, [title]);
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-header">
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {actions ? <div class="actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

import type { ComponentChildren, JSX } from 'preact';
import { href, navigate } from '../router.ts';

type Props = Omit<JSX.HTMLAttributes<HTMLAnchorElement>, 'href' | 'onClick'> & {
  to: string;
  children: ComponentChildren;
  /** Called when a plain click (or Enter) navigates in place. */
  onNavigate?: () => void;
};

/** A real link (it opens in a new tab, copies, reads out as a link) that navigates in place on a plain click. */
export function Link({ to, children, onNavigate, ...rest }: Props) {
  return (
    <a
      {...rest}
      href={href(to)}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(to);
        onNavigate?.();
      }}
    >
      {children}
    </a>
  );
}

import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { logout, type SessionUser } from '../api/session.ts';
import { NAV_ITEMS } from '../nav-items.ts';
import { Link } from './link.tsx';

function isCurrent(item: string, path: string): boolean {
  return item === '/' ? path === '/' : path === item || path.startsWith(`${item}/`);
}

/**
 * The frame around every page: a skip link, the navigation (a side bar on wide screens, a menu button on
 * narrow ones) and the signed-in user with a log-out button.
 */
export function Layout({
  path,
  user,
  children,
}: {
  path: string;
  user: SessionUser;
  children: ComponentChildren;
}) {
  const [menuOpen, setMenuOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  // Escape folds the open menu, like a dialog, and puts focus back where it was opened.
  useEffect(() => {
    if (!menuOpen) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      setMenuOpen(false);
      menuButton.current?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [menuOpen]);
  // Close the menu and move focus to the new page's heading after navigating.
  useEffect(() => {
    setMenuOpen(false);
    document.getElementById('page-title')?.focus({ preventScroll: false });
  }, [path]);
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <button
          type="button"
          class="menu-button"
          ref={menuButton}
          aria-expanded={menuOpen}
          aria-controls="main-nav"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          Menu
        </button>
        <span class="brand">Platform console</span>
        <span class="user">
          <span class="muted">Signed in as</span> <strong>{user.username}</strong>
          <button type="button" onClick={() => void logout()}>
            Log out
          </button>
        </span>
      </header>
      <nav id="main-nav" class={`sidebar${menuOpen ? ' open' : ''}`} aria-label="Sections">
        <ul>
          {NAV_ITEMS.map((item) => (
            <li key={item.path}>
              <Link
                to={item.path}
                aria-current={isCurrent(item.path, path) ? 'page' : undefined}
                // Folds the menu even when the link leads to the page already shown, and then puts focus on
                // that page's heading as a new page would.
                onNavigate={() => {
                  setMenuOpen(false);
                  if (item.path === path) document.getElementById('page-title')?.focus();
                }}
              >
                {item.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" class="content">
        {children}
      </main>
    </div>
  );
}

import { render } from 'preact';
import { App } from './app.tsx';
import { installFocusKeeper } from './focus.ts';
import './styles.css';
import './operator.css';

installFocusKeeper();
render(<App />, document.getElementById('app')!);

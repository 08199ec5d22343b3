import type { TestProject } from 'vitest/node';
import { resolveChromium } from './chromium-path.js';

declare module 'vitest' {
  export interface ProvidedContext {
    chromium: { path: string; origin: 'CHROMIUM_PATH' | 'system' | 'bundled' };
  }
}

/**
 * Decides the console tests' Chromium once, before the workers start: the bundled build unpacks into one
 * fixed folder, and workers unpacking it at the same time would write the same files at once.
 */
export default async function setup(project: TestProject): Promise<void> {
  project.provide('chromium', await resolveChromium());
}

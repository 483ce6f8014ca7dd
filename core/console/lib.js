// One place that binds htm to Preact, so pages import their toolkit from here.
import { h, render, Fragment } from '/console/vendor/preact.js';
import { useState, useEffect, useRef, useCallback, useMemo } from '/console/vendor/hooks.js';
import htm from '/console/vendor/htm.js';

export const html = htm.bind(h);
export { h, render, Fragment, useState, useEffect, useRef, useCallback, useMemo };

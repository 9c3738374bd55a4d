// cinder_lite dashboard: a client of the public v3 API, nothing else.
// Views: #/volumes, #/volume/<id>, #/snapshots, #/snapshot/<id> (in
// snapshots.js, loaded first), #/backends.  A volume's backups are drawn
// by backups.js (also loaded first).  The live part of a view is
// read again every few seconds while the tab is visible, and drawn again
// only when what the API said changed.
'use strict';

const VERSION = 'volume 3.71';
const REFRESH_MS = 3000;
const PAGE = 20;
const CHIPS = 4;                 // host chips per volume before "+N"
const ATTACHMENTS_LIMIT = 1000;  // the API's default osapi_max_limit
const SNAPSHOTS_LIMIT = 1000;    // a volume's snapshots, in one answer
let auth = JSON.parse(sessionStorage.getItem('cl-dashboard-auth') || 'null');
let isAdmin = false;
let timer = null;
let lastKey = null;
let routeKey = null;
const list = {markers: [], marker: null, filters: {}};

// -- DOM ---------------------------------------------------------------------
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, kids);
  return el;
}

function s(tag, attrs, ...kids) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  setAttrs(el, attrs);
  append(el, kids);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, kids) {
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
}

const $ = (id) => document.getElementById(id);

// -- the API -------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

class Lost extends Error {}

class NotAnId extends Error {}

function faultMessage(data, text) {
  if (data && typeof data === 'object') {
    for (const value of Object.values(data)) {
      if (value && typeof value === 'object' && value.message) {
        return value.message;
      }
    }
  }
  return text ? text.slice(0, 300) : 'no message';
}

async function api(method, path, body) {
  const headers = {'OpenStack-API-Version': VERSION,
                   'Accept': 'application/json',
                   'X-Auth-Token': auth.token};
  if (auth.roles) headers['X-Roles'] = auth.roles;
  const init = {method, headers};
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch('/v3' + path, init);
  } catch (e) {
    $('banner').hidden = false;
    throw new Lost(String(e));
  }
  $('banner').hidden = true;
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!resp.ok) throw new ApiError(resp.status, faultMessage(data, text));
  return data;
}

function showError(e) {
  if (e instanceof Lost) return;   // the banner says it
  const box = $('error');
  box.replaceChildren(
    h('strong', {}, e instanceof ApiError ? 'HTTP ' + e.status + ': ' : ''),
    e.message,
    ' ',
    h('button', {type: 'button', class: 'secondary',
                 onclick: () => { box.hidden = true; }}, 'Dismiss'));
  box.hidden = false;
}

// a user's action: clear the old error, show a new one, redraw at once
async function act(fn) {
  $('error').hidden = true;
  try {
    await fn();
  } catch (e) {
    showError(e);
  }
  refresh(true);
}

// -- sign in -------------------------------------------------------------------
function signedIn() {
  $('signin').hidden = true;
  $('nav').hidden = false;
  $('signout').hidden = false;
  $('who').textContent = auth.label;
}

async function signIn(ev) {
  ev.preventDefault();
  if ($('auth-mode').value === 'token') {
    auth = {token: $('token').value.trim(), roles: null, label: 'token'};
  } else {
    const user = $('user').value.trim();
    const project = $('project').value.trim();
    const role = $('role').value;
    auth = {token: user + ':' + project,
            roles: role === 'admin' ? 'admin,member,reader'
              : role === 'member' ? 'member,reader' : 'reader',
            label: user + ' (' + role + ') in ' + project};
  }
  try {
    await whoami();
  } catch (e) {
    auth = null;
    showError(e);
    return;
  }
  $('error').hidden = true;
  sessionStorage.setItem('cl-dashboard-auth', JSON.stringify(auth));
  signedIn();
  if (!location.hash) location.hash = '#/volumes';
  else route();
}

// an admin may list the services; anyone else gets 403
async function whoami() {
  await api('GET', '/volumes?limit=1');
  try {
    await api('GET', '/os-services');
    isAdmin = true;
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 403) throw e;
    isAdmin = false;
  }
}

function signOut() {
  auth = null;
  sessionStorage.removeItem('cl-dashboard-auth');
  stop();
  $('view').replaceChildren();
  $('live').replaceChildren();
  $('nav').hidden = true;
  $('signout').hidden = true;
  $('who').textContent = '';
  $('signin').hidden = false;
}

// -- routing and refresh -------------------------------------------------------
function current() {
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  if ((parts[0] === 'volume' || parts[0] === 'snapshot') && parts[1]) {
    let id = parts[1];
    try { id = decodeURIComponent(id); } catch (e) { /* kept as written */ }
    return {name: parts[0], id};
  }
  if (parts[0] === 'backends' || parts[0] === 'snapshots') {
    return {name: parts[0]};
  }
  return {name: 'volumes'};
}

function route() {
  if (!auth) return;
  const r = current();
  for (const [id, name] of [['nav-volumes', 'volumes'],
                            ['nav-snapshots', 'snapshots'],
                            ['nav-backends', 'backends']]) {
    $(id).classList.toggle('current', r.name === name ||
                           r.name + 's' === name);
  }
  routeKey = JSON.stringify(r);
  lastKey = null;
  $('error').hidden = true;
  $('live').replaceChildren(h('p', {class: 'muted'}, 'Loading…'));
  $('view').replaceChildren(h('div', {}, VIEWS[r.name].controls(r)));
  start();
}

function start() {
  stop();
  refresh(true);
  timer = setInterval(() => refresh(false), REFRESH_MS);
}

function stop() {
  if (timer) clearInterval(timer);
  timer = null;
}

let busy = false;
async function refresh(force) {
  if (!auth || document.hidden || (busy && !force)) return;
  const r = current();
  const key = JSON.stringify(r);
  busy = true;
  try {
    const data = await VIEWS[r.name].load(r);
    const drawn = JSON.stringify(data);
    if (key !== routeKey || (!force && drawn === lastKey)) return;
    lastKey = drawn;
    $('live').replaceChildren(h('div', {}, VIEWS[r.name].draw(r, data)));
  } catch (e) {
    if ((e instanceof ApiError || e instanceof NotAnId) &&
        key === routeKey) {
      lastKey = null;
      $('live').replaceChildren(h('p', {class: 'muted'},
        e instanceof NotAnId ? 'Nothing to show: the link names no ' +
          'volume or snapshot.' : 'Nothing to show: the API refused.'));
    }
    showError(e);
  } finally {
    busy = false;
  }
}

document.addEventListener('visibilitychange', () => {
  if (document.hidden) stop();
  else if (auth) start();
});

// -- helpers -------------------------------------------------------------------
// A reader may look but not act: the page offers no action to one.  The
// role is the one chosen at sign-in (noauth); a keystone token's roles
// are not known to the page, which then offers the actions and shows the
// API's 403 when one is refused.
function mayAct() {
  return !(auth && auth.roles === 'reader');
}

function readerNote() {
  return h('p', {class: 'hint', id: 'reader-note'},
           'Signed in as a reader: you can look, not act.');
}

// ‹ Previous and Next › of a list whose state is {markers, marker}
function pager(state, next) {
  const prev = h('button', {type: 'button', class: 'secondary',
                            disabled: !state.markers.length, onclick: () => {
    state.marker = state.markers.pop() || null;
    refresh(true);
  }}, '‹ Previous');
  const nxt = h('button', {type: 'button', class: 'secondary',
                           disabled: !next, onclick: () => {
    state.markers.push(state.marker);
    state.marker = next;
    refresh(true);
  }}, 'Next ›');
  return h('div', {class: 'pager'}, prev, nxt);
}

// an id as one segment of an API path or of a view's hash: escaped, so an
// id from the hash or from an answer cannot name another path or add a
// query ('.' and '..' are refused: a browser resolves them even escaped)
function seg(id) {
  const text = String(id);
  if (text === '' || text === '.' || text === '..') {
    throw new NotAnId('Not an id: ' + JSON.stringify(text));
  }
  return encodeURIComponent(text);
}

function query(params) {
  const parts = Object.entries(params)
    .filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v));
  return parts.length ? '?' + parts.join('&') : '';
}

function status(text) {
  return h('span', {class: 'status ' + text}, text);
}

function since(iso) {
  if (!iso) return '-';
  const d = new Date(iso.endsWith('Z') || iso.includes('+') ? iso : iso + 'Z');
  return d.toISOString().replace('T', ' ').slice(0, 19);
}

function modeBadge(mode) {
  return h('span', {class: 'badge ' + mode}, mode);
}

function nextMarker(page, key) {
  const next = (page[key + '_links'] || []).find((l) => l.rel === 'next');
  if (!next) return null;
  return new URL(next.href).searchParams.get('marker');
}

async function allAttachments(params) {
  const page = await api('GET', '/attachments/detail' + query(
    Object.assign({limit: ATTACHMENTS_LIMIT, all_tenants: isAdmin ? 1 : null},
                  params)));
  return page.attachments;
}

// where an attachment is: its host (shown to admins), else its instance
function hostOf(a) {
  if (a.attached_host) return a.attached_host;
  return a.instance ? 'instance ' + a.instance.slice(0, 8) : 'no host yet';
}

// -- volumes -------------------------------------------------------------------
const STATUSES = ['', 'available', 'in-use', 'reserved', 'attaching',
                  'detaching', 'creating', 'extending', 'deleting', 'error',
                  'error_deleting', 'error_extending'];

function volumesControls() {
  const name = h('input', {id: 'filter-name', placeholder: 'part of a name',
                           value: list.filters.name || ''});
  const st = h('select', {id: 'filter-status'},
               STATUSES.map((x) => h('option', {value: x,
                 selected: x === (list.filters.status || '')}, x || 'any')));
  const type = h('select', {id: 'filter-type'}, h('option', {value: ''}, 'any'));
  const newType = h('select', {id: 'new-type'});
  api('GET', '/types').then((body) => {
    for (const t of body.volume_types) {
      type.append(h('option', {value: t.name,
                               selected: t.name === list.filters.type}, t.name));
      newType.append(h('option', {value: t.name}, t.name));
    }
  }).catch(showError);
  const apply = (ev) => {
    ev.preventDefault();
    list.filters = {name: name.value.trim(), status: st.value,
                    type: type.value};
    list.markers = [];
    list.marker = null;
    refresh(true);
  };
  const newName = h('input', {id: 'new-name', placeholder: 'name'});
  const newSize = h('input', {id: 'new-size', type: 'number', min: 1,
                              value: 1});
  const create = (ev) => {
    ev.preventDefault();
    act(() => api('POST', '/volumes', {volume: {
      name: newName.value.trim() || null, size: Number(newSize.value),
      volume_type: newType.value || null}}));
  };
  return [
    h('h1', {}, 'Volumes'),
    h('form', {class: 'toolbar', id: 'filters', onsubmit: apply},
      h('label', {}, 'Name', name), h('label', {}, 'Status', st),
      h('label', {}, 'Type', type),
      h('button', {type: 'submit', id: 'apply-filters'}, 'Filter')),
    mayAct() ? h('form', {class: 'toolbar card', id: 'create',
                          onsubmit: create},
      h('label', {}, 'New volume', newName), h('label', {}, 'GiB', newSize),
      h('label', {}, 'Type', newType),
      h('button', {type: 'submit', id: 'create-volume'}, 'Create'))
      : readerNote(),
  ];
}

async function volumesLoad() {
  const f = list.filters;
  // one more than a page: Next is offered only when there is a next page
  // (the API's next link comes with every full page, even the last one);
  // an API whose osapi_max_limit is below that pages by its own link
  const page = await api('GET', '/volumes/detail' + query({
    limit: PAGE + 1, marker: list.marker, 'name~': f.name, status: f.status,
    volume_type: f.type, all_tenants: isAdmin ? 1 : null}));
  const volumes = page.volumes.slice(0, PAGE);
  const next = page.volumes.length > PAGE ? volumes[PAGE - 1].id
    : nextMarker(page, 'volumes');
  // every live attachment the caller may see, in one request: the hosts of
  // the whole page without a request per volume
  const atts = await api('GET', '/attachments/detail' + query(
    {limit: ATTACHMENTS_LIMIT, all_tenants: isAdmin ? 1 : null}));
  const holders = {};
  for (const a of atts.attachments) {
    (holders[a.volume_id] = holders[a.volume_id] || []).push({
      host: hostOf(a), mode: a.attach_mode, status: a.status});
  }
  const partial = nextMarker(atts, 'attachments') === null ? null
    : atts.attachments.length;
  return {volumes, next, holders, partial, admin: isAdmin};
}

// one chip per host and mode (and status): "node-1 rw", "node-2 ro ×2"
function holderChips(holders) {
  const groups = new Map();
  for (const x of holders) {
    const key = [x.host, x.mode, x.status].join('\n');
    if (!groups.has(key)) groups.set(key, Object.assign({count: 0}, x));
    groups.get(key).count++;
  }
  const chips = [...groups.values()].sort((a, b) =>
    (a.mode === b.mode ? 0 : a.mode === 'rw' ? -1 : 1) ||
    a.host.localeCompare(b.host, undefined, {numeric: true}));
  const label = (c) => c.host + ' ' + c.mode +
    (c.status === 'attached' ? '' : ' ' + c.status) +
    (c.count > 1 ? ' ×' + c.count : '');
  const shown = chips.slice(0, CHIPS);
  const rest = chips.slice(CHIPS);
  return h('ul', {class: 'chips'},
    shown.map((c) => h('li', {class: 'chip ' + c.mode +
                              (c.status === 'attached' ? ''
                                : c.status.startsWith('error') ? ' failed'
                                  : ' moving'),
                              'data-host': c.host, 'data-mode': c.mode,
                              title: label(c)},
      h('span', {class: 'chip-host'}, c.host), ' ',
      h('span', {class: 'chip-mode'}, c.mode),
      c.status === 'attached' ? '' : h('span', {class: 'chip-status'},
                                       ' ' + c.status),
      c.count > 1 ? ' ×' + c.count : '')),
    rest.length ? h('li', {class: 'chip more',
                           title: rest.map(label).join(', ')},
                    '+' + rest.length) : '');
}

function volumesDraw(r, data) {
  const columns = [
    ['Name'], data.admin ? ['Project', 'project hide-narrow'] : null,
    ['ID', 'hide-narrow'], ['Size', 'hide-narrow'], ['Type', 'hide-narrow'],
    ['Status'], ['Shareable', 'hide-narrow'],
    data.admin ? ['Backend', 'hide-narrow'] : null,
    ['Attached to']].filter((c) => c);
  const rows = data.volumes.map((v) => {
    const holders = data.holders[v.id] || [];
    const project = v['os-vol-tenant-attr:tenant_id'];
    return h('tr', {'data-volume': v.id},
      h('td', {class: 'name'},
        h('a', {href: '#/volume/' + seg(v.id)}, v.name || '(no name)'),
        v.description ? h('div', {class: 'description',
                                  title: v.description}, v.description)
          : ''),
      data.admin ? h('td', {class: 'project hide-narrow', title: project},
                     project) : null,
      h('td', {class: 'id hide-narrow'}, v.id),
      h('td', {class: 'size hide-narrow'}, v.size + ' GiB'),
      h('td', {class: 'hide-narrow'}, v.volume_type),
      h('td', {}, status(v.status)),
      h('td', {class: 'hide-narrow'}, v.multiattach
        ? h('span', {class: 'badge shared'}, 'shared') : ''),
      data.admin ? h('td', {class: 'hide-narrow'},
                     v['os-vol-host-attr:host'] || '-') : null,
      h('td', {class: 'holders'}, holders.length ? holderChips(holders)
        : h('span', {class: 'muted'}, '-')));
  });
  return [
    h('div', {class: 'scroll'}, h('table', {id: 'volumes'},
      h('thead', {}, h('tr', {},
        columns.map(([title, cls]) => h('th', {class: cls}, title)))),
      h('tbody', {}, rows.length ? rows
        : h('tr', {}, h('td', {colspan: columns.length, class: 'muted'},
                        'No volumes.'))))),
    data.partial === null ? '' : h('p', {class: 'hint', id: 'holders-partial'},
      'The hosts shown are those of the newest ' + data.partial +
      ' live attachments (one page of the API); older ones are missing.'),
    pager(list, data.next),
  ];
}

// -- one volume ----------------------------------------------------------------
// the statuses in which a volume is attached or on its way: a snapshot
// then needs ``force`` before 3.66 (this page sends it whatever the
// version, once the user ticked it)
const ATTACHED = ['in-use', 'reserved', 'attaching', 'detaching'];

function volumeControls(r) {
  const back = h('p', {}, h('a', {href: '#/volumes'}, '‹ Volumes'));
  if (!mayAct()) return [back, readerNote()];
  const size = h('input', {id: 'extend-size', type: 'number', min: 1});
  const snapName = h('input', {id: 'snapshot-name', placeholder: 'name'});
  const snapDesc = h('input', {id: 'snapshot-description',
                               placeholder: 'optional'});
  const force = h('input', {id: 'snapshot-force', type: 'checkbox'});
  const forceRow = h('label', {class: 'check', id: 'snapshot-force-row',
                               hidden: true}, force,
    'Force: the volume is attached; the snapshot holds what its hosts ' +
    'have written so far');
  const take = h('button', {type: 'submit', id: 'take-snapshot'},
                 'Take snapshot');
  force.addEventListener('change', () => {
    take.disabled = !forceRow.hidden && !force.checked;
  });
  const snapshot = (ev) => {
    ev.preventDefault();
    act(async () => {
      const body = {volume_id: r.id, name: snapName.value.trim() || null,
                    description: snapDesc.value.trim() || null};
      if (!forceRow.hidden && force.checked) body.force = true;
      await api('POST', '/snapshots', {snapshot: body});
      snapName.value = '';
      snapDesc.value = '';
      // the next snapshot of a volume in use is confirmed again
      force.checked = false;
      take.disabled = !forceRow.hidden;
    });
  };
  return [
    back,
    h('div', {class: 'grid controls'}, h('div', {class: 'actions card'},
      h('label', {}, 'New size (GiB)', size),
      h('button', {type: 'button', id: 'extend', onclick: () => act(() =>
        api('POST', '/volumes/' + seg(r.id) + '/action',
            {'os-extend': {new_size: Number(size.value)}}))}, 'Extend'),
      h('button', {type: 'button', class: 'danger', id: 'delete-volume',
                   onclick: () => act(async () => {
        await api('DELETE', '/volumes/' + seg(r.id));
        location.hash = '#/volumes';
      })}, 'Delete volume')),
    h('form', {class: 'toolbar card', id: 'take-snapshot-form',
               onsubmit: snapshot},
      h('label', {}, 'New snapshot', snapName),
      h('label', {}, 'Description', snapDesc), forceRow, take)),
  ];
}

// the force box shows while the volume is attached, and must be ticked
// to take a snapshot then
function showForce(status) {
  const row = $('snapshot-force-row');
  if (!row) return;
  const need = ATTACHED.includes(status);
  if (row.hidden === need) {
    row.hidden = !need;
    $('snapshot-force').checked = false;
  }
  $('take-snapshot').disabled = need && !$('snapshot-force').checked;
}

async function volumeLoad(r) {
  const volume = (await api('GET', '/volumes/' + seg(r.id))).volume;
  const attachments = await allAttachments({volume_id: r.id});
  const snaps = await api('GET', '/snapshots/detail' + query({
    volume_id: r.id, limit: SNAPSHOTS_LIMIT,
    all_tenants: isAdmin ? 1 : null}));
  const snapshotsPartial = nextMarker(snaps, 'snapshots') === null ? null
    : snaps.snapshots.length;
  let events = null;
  if (isAdmin) {
    events = (await api('GET', '/os-attachment-events' +
                        query({volume_id: r.id}))).attachment_events;
  }
  const backups = await volumeBackupsLoad(volume);
  return {volume, attachments, snapshots: snaps.snapshots, snapshotsPartial,
          backups, events, admin: isAdmin};
}

// the volume's circle, and the largest box of three lines inside it
const VOLUME_R = 54, LABEL_H = 44;
const LABEL_W = 2 * Math.floor(Math.sqrt(VOLUME_R ** 2 - (LABEL_H / 2) ** 2));

const EDGE = {attached: '#1e6b34', attaching: '#8a5a00', reserved: '#8a5a00',
              detaching: '#8a5a00', error_attaching: '#a61b1b',
              error_detaching: '#a61b1b'};

function picture(volume, attachments) {
  // the volume in the middle, each host around it: solid rw, dashed ro
  const byHost = new Map();
  for (const a of attachments) {
    const host = hostOf(a);
    if (!byHost.has(host)) byHost.set(host, []);
    byHost.get(host).push(a);
  }
  const W = 640, H = 360, cx = W / 2, cy = H / 2, R = 140;
  const kids = [];
  const hosts = [...byHost.entries()];
  hosts.forEach(([host, atts], i) => {
    const angle = (2 * Math.PI * i) / Math.max(hosts.length, 1) - Math.PI / 2;
    const x = cx + R * 1.6 * Math.cos(angle), y = cy + R * Math.sin(angle);
    atts.forEach((a, j) => {
      const off = (j - (atts.length - 1) / 2) * 6;
      kids.push(s('line', {x1: cx + off, y1: cy + off, x2: x + off,
                           y2: y + off, stroke: EDGE[a.status] || '#44505e',
                           'stroke-width': 3, class: 'edge ' + a.attach_mode,
                           'data-attachment': a.id,
                           'stroke-dasharray': a.attach_mode === 'ro'
                             ? '8 6' : null}));
    });
    kids.push(s('g', {class: 'host-node', 'data-host': host},
      s('title', {}, host),
      s('rect', {x: x - 70, y: y - 18, width: 140, height: 36, rx: 6,
                 class: 'host'}),
      s('text', {x, y: y - 2, 'text-anchor': 'middle'},
        host.length > 20 ? host.slice(0, 19) + '…' : host),
      s('text', {x, y: y + 13, 'text-anchor': 'middle', class: 'muted'},
        atts.map((a) => a.attach_mode + ' ' + a.status).join(', '))));
  });
  kids.push(s('circle', {cx, cy, r: VOLUME_R, class: 'volume'}));
  // the name wraps in a box inside the circle, three lines at most, then
  // an ellipsis; the full name is its title
  const name = volume.name || volume.id;
  kids.push(s('foreignObject', {x: cx - LABEL_W / 2, y: cy - LABEL_H / 2,
                                width: LABEL_W, height: LABEL_H},
    h('div', {class: 'volume-label-box'},
      h('div', {class: 'volume-label', title: name}, name))));
  return s('svg', {viewBox: '0 0 ' + W + ' ' + H, class: 'picture',
                   role: 'img', 'aria-label': 'who has this volume'}, kids);
}

function volumeDraw(r, data) {
  const v = data.volume;
  const rows = data.attachments.map((a) => h('tr', {'data-attachment': a.id},
    h('td', {class: 'id'}, a.instance || '-'),
    h('td', {}, a.attached_host || '-'),
    h('td', {}, modeBadge(a.attach_mode)),
    h('td', {}, status(a.status)),
    h('td', {class: 'hide-narrow'}, since(a.attached_at)),
    h('td', {class: 'hide-narrow'}, a.export_host || '-'),
    mayAct() ? h('td', {class: 'row-actions'},
      h('button', {type: 'button', class: 'secondary detach',
                   onclick: () => act(() =>
        api('DELETE', '/attachments/' + seg(a.id)))}, 'Detach'),
      data.admin ? [' ', h('button', {type: 'button', class: 'danger',
                                      onclick: () => act(() =>
        api('POST', '/volumes/' + seg(v.id) + '/action',
            {'os-force_detach': {attachment_id: a.id}}))}, 'Force')] : '')
      : null));
  showForce(v.status);
  const trail = data.events === null
    ? h('p', {class: 'muted'}, 'The audit trail is shown to administrators.')
    : !data.events.length ? h('p', {class: 'muted'}, 'No attachment events.')
    : h('ol', {class: 'timeline', id: 'timeline'},
      data.events.slice().reverse().map((e) => h('li', {},
        h('time', {}, since(e.created_at)),
        h('strong', {}, (e.from_status || '∅') + ' → ' + e.to_status), ' ',
        e.attached_host ? 'on ' + e.attached_host + ' ' : '',
        e.attach_mode ? modeBadge(e.attach_mode) : '', ' ',
        h('span', {class: 'muted'}, 'by ' + (e.user_id || '?') +
          (e.reason ? ' — ' + e.reason : '')))));
  return [
    h('h1', {}, v.name || v.id, ' ', v.multiattach
      ? h('span', {class: 'badge shared'}, 'shared') : ''),
    h('div', {class: 'grid'},
      h('div', {class: 'card'}, h('dl', {class: 'facts'},
        h('dt', {}, 'ID'), h('dd', {}, v.id),
        h('dt', {}, 'Status'), h('dd', {}, status(v.status)),
        h('dt', {}, 'Size'), h('dd', {}, v.size + ' GiB'),
        h('dt', {}, 'Type'), h('dd', {}, v.volume_type),
        h('dt', {}, 'Backend'), h('dd', {}, v['os-vol-host-attr:host'] || '-'),
        h('dt', {}, 'Attachments'), h('dd', {}, String(data.attachments.length)),
        v.snapshot_id ? [h('dt', {}, 'From snapshot'), h('dd', {},
          h('a', {href: '#/snapshot/' + seg(v.snapshot_id)},
            v.snapshot_id))] : ''
      )),
      h('div', {class: 'card'}, picture(v, data.attachments),
        h('p', {class: 'legend'}, 'solid: read-write · dashed: read-only · ' +
          'green attached, amber moving, red failed'))),
    h('h2', {}, 'Attachments'),
    h('div', {class: 'scroll'}, h('table', {id: 'attachments'},
      h('thead', {}, h('tr', {}, h('th', {}, 'Instance'), h('th', {}, 'Host'),
        h('th', {}, 'Mode'), h('th', {}, 'Status'),
        h('th', {class: 'hide-narrow'}, 'Attached since'),
        h('th', {class: 'hide-narrow'}, 'Export host'),
        mayAct() ? h('th', {}, '') : null)),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', {colspan: 7,
        class: 'muted'}, 'Not attached.'))))),
    h('h2', {}, 'Snapshots'),
    snapshotTable(data.snapshots, data.snapshotsPartial),
    h('h2', {}, 'Backups'),
    backupTable(data.backups, v.id),
    h('h2', {}, 'Audit trail'),
    h('div', {class: 'card'}, trail),
  ];
}

// -- backends ------------------------------------------------------------------
async function backendsLoad() {
  const pools = (await api('GET', '/scheduler-stats/get_pools?detail=true'))
    .pools;
  const services = (await api('GET', '/os-services')).services;
  return {pools, services};
}

function backendsDraw(r, data) {
  const pools = data.pools.map((p) => {
    const c = p.capabilities || {};
    const total = Number(c.total_capacity_gb) || 0;
    const free = Number(c.free_capacity_gb) || 0;
    const ratio = Number(c.max_over_subscription_ratio) || 1;
    const limit = c.thin_provisioning_support ? total * ratio : total;
    const prov = Number(c.provisioned_capacity_gb) || 0;
    return h('div', {class: 'card pool', 'data-pool': p.name},
      h('h2', {}, p.name),
      h('dl', {class: 'facts'},
        h('dt', {}, 'Used'), h('dd', {},
          h('meter', {min: 0, max: total || 1, value: total - free,
                      title: 'used of total'}),
          (total - free).toFixed(1) + ' of ' + total.toFixed(1) + ' GiB (' +
            free.toFixed(1) + ' free)'),
        h('dt', {}, 'Provisioned'), h('dd', {},
          h('meter', {min: 0, max: limit || 1, value: prov,
                      title: 'provisioned of the over-subscription limit'}),
          prov.toFixed(1) + ' of ' + limit.toFixed(1) + ' GiB (ratio ' +
            ratio + ')'),
        h('dt', {}, 'Multiattach'), h('dd', {}, c.multiattach ? '✓' : '✗'),
        h('dt', {}, 'Protocol'), h('dd', {}, c.storage_protocol ||
                                    c.target_protocol || '-'),
        h('dt', {}, 'Backend name'), h('dd', {}, c.volume_backend_name || '-')));
  });
  const clusters = {};
  for (const sv of data.services) {
    if (sv.cluster) (clusters[sv.cluster] = clusters[sv.cluster] || [])
      .push(sv.host);
  }
  return [
    h('h1', {}, 'Backends'),
    pools.length ? pools : h('p', {class: 'muted'}, 'No pools reported.'),
    h('h2', {}, 'Services'),
    h('div', {class: 'scroll'}, h('table', {id: 'services'},
      h('thead', {}, h('tr', {}, ['Binary', 'Host', 'Zone', 'Status', 'State',
        'Last heartbeat', 'Cluster'].map((x) => h('th', {}, x)))),
      h('tbody', {}, data.services.map((sv) => h('tr', {},
        h('td', {}, sv.binary), h('td', {}, sv.host), h('td', {}, sv.zone),
        h('td', {}, sv.status), h('td', {}, status(sv.state)),
        h('td', {}, since(sv.updated_at)), h('td', {}, sv.cluster || '-')))))),
    Object.keys(clusters).length ? [h('h2', {}, 'Clusters'),
      h('ul', {}, Object.entries(clusters).map(([name, members]) =>
        h('li', {}, name + ': ' + members.join(', '))))] : '',
  ];
}

const VIEWS = {
  volumes: {controls: volumesControls, load: volumesLoad, draw: volumesDraw},
  volume: {controls: volumeControls, load: volumeLoad, draw: volumeDraw},
  snapshots: {controls: snapshotsControls, load: snapshotsLoad,
              draw: snapshotsDraw},
  snapshot: {controls: snapshotControls, load: snapshotLoad,
             draw: snapshotDraw},
  backends: {controls: () => [], load: backendsLoad, draw: backendsDraw},
};

// -- start ---------------------------------------------------------------------
window.addEventListener('hashchange', route);
$('signin').addEventListener('submit', signIn);
$('signout').addEventListener('click', signOut);
$('auth-mode').addEventListener('change', () => {
  const token = $('auth-mode').value === 'token';
  $('token-fields').hidden = !token;
  $('noauth-fields').hidden = token;
});
if (auth) {
  whoami().then(() => { signedIn(); route(); }).catch((e) => {
    showError(e);
    signOut();
  });
} else {
  $('signin').hidden = false;
}

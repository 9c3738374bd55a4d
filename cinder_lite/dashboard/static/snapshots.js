// cinder_lite dashboard: the snapshot views (#/snapshots, #/snapshot/<id>)
// and the snapshots table of a volume's page.  Loaded before app.js, whose
// view table names these functions; they call app.js's helpers (h, api,
// act, ...) only when a view runs, after both files are loaded.
'use strict';

const snapList = {markers: [], marker: null, filters: {}};

// a volume's snapshots: each links to its page, which makes volumes
function snapshotTable(snapshots, partial) {
  const rows = snapshots.map((sn) => h('tr', {'data-snapshot': sn.id},
    h('td', {class: 'name'},
      h('a', {href: '#/snapshot/' + seg(sn.id)}, sn.name || '(no name)'),
      sn.description ? h('div', {class: 'description',
                                 title: sn.description}, sn.description)
        : ''),
    h('td', {}, status(sn.status)),
    h('td', {class: 'size'}, sn.size + ' GiB'),
    h('td', {class: 'hide-narrow'}, since(sn.created_at)),
    mayAct() ? h('td', {class: 'row-actions'},
      // at a phone's width the name leads to the same form
      h('a', {class: 'button secondary hide-narrow',
              href: '#/snapshot/' + seg(sn.id)}, 'New volume…'), ' ',
      h('button', {type: 'button', class: 'danger delete-snapshot',
                   onclick: () => act(() =>
        api('DELETE', '/snapshots/' + seg(sn.id)))}, 'Delete')) : null));
  return [
    h('div', {class: 'scroll'}, h('table', {id: 'snapshots'},
      h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Status'),
        h('th', {}, 'Size'), h('th', {class: 'hide-narrow'}, 'Created'),
        mayAct() ? h('th', {}, '') : null)),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', {colspan: 5,
        class: 'muted'}, 'No snapshots.'))))),
    partial === null ? '' : h('p', {class: 'hint'},
      'The newest ' + partial + ' snapshots (one page of the API).'),
  ];
}

// -- snapshots -----------------------------------------------------------------
const SNAPSHOT_STATUSES = ['', 'available', 'creating', 'deleting', 'error',
                           'error_deleting', 'backing-up', 'restoring'];

function snapshotsControls() {
  const name = h('input', {id: 'snapshot-filter-name',
                           placeholder: 'the whole name',
                           value: snapList.filters.name || ''});
  const st = h('select', {id: 'snapshot-filter-status'},
               SNAPSHOT_STATUSES.map((x) => h('option', {value: x,
                 selected: x === (snapList.filters.status || '')},
               x || 'any')));
  const apply = (ev) => {
    ev.preventDefault();
    snapList.filters = {name: name.value.trim(), status: st.value};
    snapList.markers = [];
    snapList.marker = null;
    refresh(true);
  };
  return [
    h('h1', {}, 'Snapshots'),
    h('form', {class: 'toolbar', id: 'snapshot-filters', onsubmit: apply},
      h('label', {}, 'Name', name), h('label', {}, 'Status', st),
      h('button', {type: 'submit'}, 'Filter')),
    mayAct() ? h('p', {class: 'hint'},
                 'A snapshot is taken from its volume\'s page.')
      : readerNote(),
  ];
}

async function snapshotsLoad() {
  const f = snapList.filters;
  const all = isAdmin ? 1 : null;
  // one more than a page, as the volumes list
  const page = await api('GET', '/snapshots/detail' + query({
    limit: PAGE + 1, marker: snapList.marker, name: f.name,
    status: f.status, all_tenants: all}));
  const snapshots = page.snapshots.slice(0, PAGE);
  const next = page.snapshots.length > PAGE ? snapshots[PAGE - 1].id
    : nextMarker(page, 'snapshots');
  // the volumes' names in one request, not one per snapshot; a volume
  // beyond that answer is shown by its id
  const vols = await api('GET', '/volumes' + query({
    limit: ATTACHMENTS_LIMIT, all_tenants: all}));
  const wanted = new Set(snapshots.map((sn) => sn.volume_id));
  const names = {};
  for (const v of vols.volumes) {
    if (wanted.has(v.id)) names[v.id] = v.name;
  }
  return {snapshots, next, names, admin: isAdmin};
}

function volumeLink(id, name) {
  return h('a', {href: '#/volume/' + seg(id), title: id},
           name || id.slice(0, 8) + '…');
}

function snapshotsDraw(r, data) {
  const columns = [
    ['Name'], data.admin ? ['Project', 'project hide-narrow'] : null,
    ['ID', 'hide-narrow'], ['Volume'], ['Size', 'hide-narrow'], ['Status'],
    ['Created', 'hide-narrow']].filter((c) => c);
  const project = 'os-extended-snapshot-attributes:project_id';
  const rows = data.snapshots.map((sn) => h('tr', {'data-snapshot': sn.id},
    h('td', {class: 'name'},
      h('a', {href: '#/snapshot/' + seg(sn.id)}, sn.name || '(no name)'),
      sn.description ? h('div', {class: 'description',
                                 title: sn.description}, sn.description)
        : ''),
    data.admin ? h('td', {class: 'project hide-narrow', title: sn[project]},
                   sn[project] || '-') : null,
    h('td', {class: 'id hide-narrow'}, sn.id),
    h('td', {class: 'volume'}, volumeLink(sn.volume_id,
                                          data.names[sn.volume_id])),
    h('td', {class: 'size hide-narrow'}, sn.size + ' GiB'),
    h('td', {}, status(sn.status)),
    h('td', {class: 'hide-narrow'}, since(sn.created_at))));
  return [
    h('div', {class: 'scroll'}, h('table', {id: 'snapshot-list'},
      h('thead', {}, h('tr', {},
        columns.map(([title, cls]) => h('th', {class: cls}, title)))),
      h('tbody', {}, rows.length ? rows
        : h('tr', {}, h('td', {colspan: columns.length, class: 'muted'},
                        'No snapshots.'))))),
    pager(snapList, data.next),
  ];
}

// -- one snapshot --------------------------------------------------------------
function snapshotControls(r) {
  const back = h('p', {}, h('a', {href: '#/snapshots'}, '‹ Snapshots'));
  if (!mayAct()) return [back, readerNote()];
  const name = h('input', {id: 'from-snapshot-name', placeholder: 'name'});
  // the size starts as the snapshot's, the smallest the API accepts
  // (set when the live part first draws the snapshot)
  const size = h('input', {id: 'from-snapshot-size', type: 'number',
                           min: 1});
  const create = (ev) => {
    ev.preventDefault();
    act(async () => {
      const volume = {name: name.value.trim() || null, snapshot_id: r.id};
      if (size.value !== '') volume.size = Number(size.value);
      const made = await api('POST', '/volumes', {volume});
      location.hash = '#/volume/' + seg(made.volume.id);
    });
  };
  return [
    back,
    // novalidate: a size below the snapshot's goes to the API, which
    // says why it refuses it
    h('form', {class: 'toolbar card', id: 'from-snapshot', novalidate: true,
               onsubmit: create},
      h('label', {}, 'New volume from it', name),
      h('label', {}, 'GiB', size),
      h('button', {type: 'submit', id: 'create-from-snapshot'},
        'Create volume'),
      h('button', {type: 'button', class: 'danger', id: 'delete-snapshot',
                   onclick: () => act(async () => {
        // (the volume it was of, as the live part last showed it)
        const volumeId = shownSnapshot && shownSnapshot.id === r.id
          ? shownSnapshot.volume_id
          : (await api('GET', '/snapshots/' + seg(r.id))).snapshot.volume_id;
        await api('DELETE', '/snapshots/' + seg(r.id));
        location.hash = '#/volume/' + seg(volumeId);
      })}, 'Delete snapshot')),
  ];
}

async function snapshotLoad(r) {
  const snapshot = (await api('GET', '/snapshots/' + seg(r.id))).snapshot;
  let volume = null;
  try {
    volume = (await api('GET', '/volumes/' + seg(snapshot.volume_id))).volume;
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
  }
  return {snapshot, volume: volume && {id: volume.id, name: volume.name,
                                       status: volume.status}};
}

// the snapshot the live part drew last
let shownSnapshot = null;

function snapshotDraw(r, data) {
  const sn = data.snapshot;
  shownSnapshot = sn;
  const size = document.getElementById('from-snapshot-size');
  if (size) {
    size.min = sn.size;
    if (!size.value) size.value = sn.size;
  }
  const extended = (k) => sn['os-extended-snapshot-attributes:' + k];
  return [
    h('h1', {}, sn.name || sn.id, ' ',
      h('span', {class: 'badge snapshot'}, 'snapshot')),
    h('div', {class: 'card'}, h('dl', {class: 'facts', id: 'snapshot-facts'},
      h('dt', {}, 'ID'), h('dd', {}, sn.id),
      h('dt', {}, 'Status'), h('dd', {}, status(sn.status)),
      h('dt', {}, 'Size'), h('dd', {}, sn.size + ' GiB'),
      h('dt', {}, 'Volume'), h('dd', {},
        volumeLink(sn.volume_id, data.volume && data.volume.name),
        data.volume ? [' ', status(data.volume.status)] : ''),
      h('dt', {}, 'Created'), h('dd', {}, since(sn.created_at)),
      h('dt', {}, 'Description'), h('dd', {}, sn.description || '-'),
      extended('progress') ? [h('dt', {}, 'Progress'),
                              h('dd', {}, extended('progress'))] : '',
      extended('project_id') ? [h('dt', {}, 'Project'),
                                h('dd', {}, extended('project_id'))] : '')),
  ];
}

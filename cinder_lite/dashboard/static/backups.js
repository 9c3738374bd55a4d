// cinder_lite dashboard: the backups of a volume's page, with the progress
// of a backup or a restore under way (cinder_lite's own GET
// /backups/<id>/progress).  Loaded before app.js, as snapshots.js; its
// functions call app.js's helpers (h, api, seg, ...) only when a view runs.
'use strict';

const BACKUPS_LIMIT = 1000;      // a volume's backups, in one answer
// the statuses in which a backup's service copies bytes
const BACKUP_RUNNING = ['creating', 'restoring'];

function bytesText(n) {
  const GiB = 1024 ** 3, MiB = 1024 ** 2;
  return n >= GiB ? (n / GiB).toFixed(1) + ' GiB'
    : (n / MiB).toFixed(1) + ' MiB';
}

// the progress of each backup in ``list`` whose copy runs, by id; a
// backup gone since the list was read has none
async function progressOf(list) {
  const found = {};
  for (const b of list.filter((x) => BACKUP_RUNNING.includes(x.status))) {
    try {
      found[b.id] = (await api('GET', '/backups/' + seg(b.id) +
                               '/progress')).progress;
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 404) throw e;
    }
  }
  return found;
}

// what a volume's page shows of backups: the volume's own, and restores
// into it from backups of other volumes (a volume being restored is
// ``restoring-backup``; its backup is found among those restoring)
async function volumeBackupsLoad(volume) {
  const all = isAdmin ? 1 : null;
  const page = await api('GET', '/backups/detail' + query({
    volume_id: volume.id, limit: BACKUPS_LIMIT, all_tenants: all}));
  const backups = page.backups;
  const partial = nextMarker(page, 'backups') === null ? null
    : backups.length;
  const progress = await progressOf(backups);
  let incoming = [];
  if (volume.status === 'restoring-backup') {
    const mine = new Set(backups.map((b) => b.id));
    const restoring = (await api('GET', '/backups/detail' + query({
      status: 'restoring', limit: BACKUPS_LIMIT, all_tenants: all})))
      .backups.filter((b) => !mine.has(b.id));
    const more = await progressOf(restoring);
    incoming = restoring
      .filter((b) => more[b.id] && more[b.id].restore_volume_id === volume.id)
      .map((b) => ({backup: {id: b.id, name: b.name, volume_id: b.volume_id},
                    progress: more[b.id]}));
  }
  return {backups, partial, progress, incoming};
}

// a bar and its words: "42.5% · 435.2 MiB of 1.0 GiB"
function progressBar(p, label) {
  return h('div', {class: 'progress', 'data-percent': p.percent},
    h('progress', {max: 100, value: p.percent, 'aria-label': label,
                   title: label + ': ' + p.percent + '%'}),
    h('span', {class: 'progress-text'}, p.percent.toFixed(1) + '% · ' +
      bytesText(p.bytes_done) + ' of ' + bytesText(p.bytes_total)));
}

function backupStatus(b, p, volumeId) {
  const restoringInto = p && p.status === 'restoring' && p.restore_volume_id;
  return [
    status(b.status),
    p ? progressBar(p, b.status === 'restoring' ? 'restore' : 'backup') : '',
    restoringInto ? h('div', {class: 'progress-where'}, 'into ',
      restoringInto === volumeId ? 'this volume'
        : volumeLink(restoringInto, null)) : '',
    b.status === 'error' && b.fail_reason
      ? h('div', {class: 'description', title: b.fail_reason},
          b.fail_reason) : '',
  ];
}

function backupTable(data, volumeId) {
  const rows = data.backups.map((b) => h('tr', {'data-backup': b.id},
    h('td', {class: 'name'}, b.name || '(no name)',
      b.description ? h('div', {class: 'description',
                                title: b.description}, b.description)
        : ''),
    h('td', {class: 'backup-status'},
      backupStatus(b, data.progress[b.id], volumeId)),
    h('td', {class: 'size'}, b.size + ' GiB'),
    h('td', {class: 'kind'},
      h('span', {class: 'badge ' + (b.is_incremental ? 'incremental'
                                                     : 'full')},
        b.is_incremental ? 'incremental' : 'full'),
      b.snapshot_id ? h('div', {class: 'muted'}, 'of a snapshot') : ''),
    h('td', {class: 'hide-narrow'}, since(b.created_at)),
    h('td', {class: 'objects hide-narrow'}, String(b.object_count))));
  const incoming = data.incoming.map((x) => h('div', {
    class: 'card restore-into', 'data-backup': x.backup.id},
    h('strong', {}, 'Restoring from backup ', x.backup.name || x.backup.id),
    ' of volume ', volumeLink(x.backup.volume_id, null),
    progressBar(x.progress, 'restore')));
  return [
    incoming,
    h('div', {class: 'scroll'}, h('table', {id: 'backups'},
      h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Status'),
        h('th', {}, 'Size'), h('th', {}, 'Kind'),
        h('th', {class: 'hide-narrow'}, 'Created'),
        h('th', {class: 'hide-narrow'}, 'Objects'))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', {colspan: 6,
        class: 'muted'}, 'No backups.'))))),
    data.partial === null ? '' : h('p', {class: 'hint'},
      'The newest ' + data.partial + ' backups (one page of the API).'),
  ];
}

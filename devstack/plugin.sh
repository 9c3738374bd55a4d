#!/bin/bash
#
# DevStack plugin for cinder_lite: a block-storage control plane speaking
# Cinder's v3 API.  Settings are in devstack/settings.
#
# stack.sh phases:
#   install      pip install -e the repository (+ nbdkit / tgt if needed)
#   post-config  write /etc/cinder-lite/cinder-lite.conf, create and
#                migrate the database, register the Keystone service and
#                endpoints
#   extra        start cl-api, cl-sch, cl-vol; wait for them; create the
#                multiattach volume type
# unstack.sh: stop the services and the target daemons they left running
# clean.sh:   also remove the configuration and the state directory

# Save trace setting
_XTRACE_CINDER_LITE=$(set +o | grep xtrace)
set -o xtrace


# Functions
# ---------

function _cinder_lite_bin {
    echo "$(get_python_exec_prefix)/$1"
}

function _cinder_lite_manage {
    $(_cinder_lite_bin cinder-lite-manage) --config-file "$CINDER_LITE_CONF" "$@"
}

function _cinder_lite_api_url {
    echo "$CINDER_LITE_SERVICE_PROTOCOL://$CINDER_LITE_SERVICE_HOST:$CINDER_LITE_SERVICE_PORT"
}

function _cinder_lite_auth_strategy {
    if [[ -n "$CINDER_LITE_AUTH_STRATEGY" ]]; then
        echo "$CINDER_LITE_AUTH_STRATEGY"
    elif is_service_enabled keystone; then
        echo keystone
    else
        echo noauth
    fi
}

# check_cinder_lite() - refuse setups that cannot work
function check_cinder_lite {
    if is_service_enabled c-api; then
        die $LINENO "cinder_lite and Cinder would both serve the block-storage" \
            "endpoint on port 8776: disable c-api, c-sch and c-vol"
    fi
    case "$CINDER_LITE_TARGET_PROTOCOL" in
        local|nbd|iscsi) ;;
        *) die $LINENO "CINDER_LITE_TARGET_PROTOCOL must be local, nbd or" \
                "iscsi, not '$CINDER_LITE_TARGET_PROTOCOL'" ;;
    esac
}

# install_cinder_lite() - the package and the target daemons it drives
function install_cinder_lite {
    setup_develop "$CINDER_LITE_DIR"
    if is_service_enabled cl-vol; then
        case "$CINDER_LITE_TARGET_PROTOCOL" in
            nbd)
                install_package nbdkit
                ;;
            iscsi)
                if is_ubuntu; then
                    install_package tgt
                else
                    install_package scsi-target-utils
                fi
                ;;
        esac
    fi
}

# configure_cinder_lite() - write the configuration file
function configure_cinder_lite {
    sudo install -d -o "$STACK_USER" -m 0755 "$CINDER_LITE_CONF_DIR"
    install -d -m 0755 "$CINDER_LITE_STATE_PATH"
    rm -f "$CINDER_LITE_CONF"

    iniset "$CINDER_LITE_CONF" DEFAULT debug "$ENABLE_DEBUG_LOG_LEVEL"
    iniset "$CINDER_LITE_CONF" DEFAULT state_path "$CINDER_LITE_STATE_PATH"
    iniset "$CINDER_LITE_CONF" DEFAULT report_interval 10
    iniset "$CINDER_LITE_CONF" DEFAULT service_down_time 20

    # message bus, one vhost per deployment when asked for
    if [[ -n "$CINDER_LITE_RABBIT_VHOST" ]] && is_service_enabled rabbit; then
        rpc_backend_add_vhost "$CINDER_LITE_RABBIT_VHOST"
    fi
    iniset_rpc_backend cinder-lite "$CINDER_LITE_CONF" DEFAULT "$CINDER_LITE_RABBIT_VHOST"

    iniset "$CINDER_LITE_CONF" database connection "$(database_connection_url cinder_lite)"

    # API
    iniset "$CINDER_LITE_CONF" DEFAULT osapi_volume_listen "$(ipv6_unquote "$SERVICE_LISTEN_ADDRESS")"
    iniset "$CINDER_LITE_CONF" DEFAULT osapi_volume_listen_port "$CINDER_LITE_SERVICE_PORT"
    iniset "$CINDER_LITE_CONF" DEFAULT osapi_volume_workers "$CINDER_LITE_API_WORKERS"
    local auth
    auth=$(_cinder_lite_auth_strategy)
    iniset "$CINDER_LITE_CONF" DEFAULT auth_strategy "$auth"
    if [[ "$auth" == "keystone" ]]; then
        configure_keystone_authtoken_middleware "$CINDER_LITE_CONF" cinder-lite
    else
        # a devstack without Keystone listens on SERVICE_LISTEN_ADDRESS
        # and is reached by SERVICE_HOST: noauth refuses both unless told
        # (it trusts every host that reaches it; the start log says so)
        iniset "$CINDER_LITE_CONF" DEFAULT allow_noauth_off_loopback True
        iniset "$CINDER_LITE_CONF" DEFAULT public_endpoint "$(_cinder_lite_api_url)"
    fi

    # one file backend on this node
    local be=$CINDER_LITE_BACKEND
    iniset "$CINDER_LITE_CONF" DEFAULT enabled_backends "$be"
    iniset "$CINDER_LITE_CONF" "$be" volume_driver cinder_lite.volume.drivers.file.FileDriver
    iniset "$CINDER_LITE_CONF" "$be" volume_backend_name "$be"
    iniset "$CINDER_LITE_CONF" "$be" volumes_dir "$CINDER_LITE_STATE_PATH/volumes/$be"
    iniset "$CINDER_LITE_CONF" "$be" multiattach True
    iniset "$CINDER_LITE_CONF" "$be" target_protocol "$CINDER_LITE_TARGET_PROTOCOL"
    iniset "$CINDER_LITE_CONF" "$be" target_ip_address "$CINDER_LITE_TARGET_IP"
    iniset "$CINDER_LITE_CONF" "$be" target_port_range "$CINDER_LITE_TARGET_PORT_RANGE"
    iniset "$CINDER_LITE_CONF" "$be" target_port "$CINDER_LITE_TARGET_PORT"

    setup_logging "$CINDER_LITE_CONF"
}

# init_cinder_lite() - a fresh database at the newest schema
function init_cinder_lite {
    recreate_database cinder_lite
    _cinder_lite_manage db sync
}

# create_cinder_lite_accounts() - service user, service and endpoints
function create_cinder_lite_accounts {
    create_service_user cinder-lite

    # clients look for either type; the API serves URLs with and without
    # the project id
    local url
    url="$(_cinder_lite_api_url)/v3/\$(project_id)s"
    get_or_create_service cinder-lite block-storage "cinder_lite block storage"
    get_or_create_endpoint block-storage "$REGION_NAME" "$url" "$url" "$url"
    get_or_create_service cinder-lite-v3 volumev3 "cinder_lite block storage (v3)"
    get_or_create_endpoint volumev3 "$REGION_NAME" "$url" "$url" "$url"
}

# start_cinder_lite() - the three services as DevStack systemd units
function start_cinder_lite {
    local opts="--config-file $CINDER_LITE_CONF"
    run_process cl-api "$(_cinder_lite_bin cinder-lite-api) $opts"
    run_process cl-sch "$(_cinder_lite_bin cinder-lite-scheduler) $opts"
    # tgtd needs root; nbdkit and local files do not
    local vol_user=$STACK_USER
    if [[ "$CINDER_LITE_TARGET_PROTOCOL" == "iscsi" ]]; then
        vol_user=root
    fi
    run_process cl-vol "$(_cinder_lite_bin cinder-lite-volume) $opts" "" "$vol_user"

    if is_service_enabled cl-api; then
        echo "Waiting for the cinder_lite API to answer"
        if ! wait_for_service "$SERVICE_TIMEOUT" "$(_cinder_lite_api_url)/"; then
            die $LINENO "cinder-lite-api did not start"
        fi
    fi
    if is_service_enabled cl-vol; then
        _cinder_lite_wait_for_backend
    fi
}

# _cinder_lite_wait_for_backend() - until a backend of this node is up
function _cinder_lite_wait_for_backend {
    local host
    host=$(iniget "$CINDER_LITE_CONF" DEFAULT host)
    host=${host:-$(hostname)}
    local _
    for _ in $(seq "$SERVICE_TIMEOUT"); do
        if _cinder_lite_manage backend list | \
                awk -v b="$host@$CINDER_LITE_BACKEND" \
                    '$1 == b && $2 == "up" {found = 1} END {exit !found}'; then
            return 0
        fi
        sleep 1
    done
    die $LINENO "backend $host@$CINDER_LITE_BACKEND is not up after" \
        "$SERVICE_TIMEOUT seconds"
}

# create_cinder_lite_volume_types() - the shareable type
function create_cinder_lite_volume_types {
    local name=$CINDER_LITE_MULTIATTACH_TYPE
    if [[ "$(_cinder_lite_auth_strategy)" == "keystone" ]]; then
        if ! openstack --os-region-name="$REGION_NAME" volume type show "$name" >/dev/null 2>&1; then
            openstack --os-region-name="$REGION_NAME" volume type create \
                --property multiattach="<is> True" "$name"
        fi
    else
        # the openstack client has no noauth mode for volumes: plain REST,
        # as Cinder's noauth (X-Auth-Token: user:project)
        local code
        code=$(curl -g -s -o /dev/null -w '%{http_code}' -X POST \
            -H "X-Auth-Token: admin:admin" \
            -H "Content-Type: application/json" \
            -d "{\"volume_type\": {\"name\": \"$name\", \"extra_specs\": {\"multiattach\": \"<is> True\"}}}" \
            "$(_cinder_lite_api_url)/v3/types")
        # 409: it exists already
        if [[ "$code" != "200" && "$code" != "409" ]]; then
            die $LINENO "creating volume type $name: HTTP $code"
        fi
    fi
}

# stop_cinder_lite() - the services, then the target daemons: DevStack's
# units stop the main process only, and the volume service leaves
# nbdkit/tgtd running on purpose (attached hosts keep their I/O)
function stop_cinder_lite {
    local svc
    for svc in cl-api cl-sch cl-vol; do
        stop_process $svc
    done
    _cinder_lite_stop_targets
}

# _cinder_lite_stop_targets() - end the daemons the export records name
function _cinder_lite_stop_targets {
    local dir=$CINDER_LITE_STATE_PATH/targets
    if ! sudo test -d "$dir"; then
        return 0
    fi
    local record pid comm
    for record in $(sudo find "$dir" -name '*.json'); do
        pid=$(sudo grep -o '"pid": *[0-9]*' "$record" | grep -o '[0-9]*$')
        [[ -n "$pid" ]] || continue
        comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
        case "$comm" in
            nbdkit)
                sudo kill -TERM "$pid" || true
                ;;
            tgtd)
                # tgtd ignores SIGTERM
                sudo kill -KILL "$pid" || true
                sudo rm -f "/var/run/tgtd/socket.$CINDER_LITE_TARGET_PORT" \
                    "/var/run/tgtd/socket.$CINDER_LITE_TARGET_PORT.lock"
                sudo rm -f "$record"
                ;;
        esac
    done
}

# cleanup_cinder_lite() - remove what a clean run would trip over
function cleanup_cinder_lite {
    _cinder_lite_stop_targets
    sudo rm -rf "$CINDER_LITE_STATE_PATH" "$CINDER_LITE_CONF_DIR"
}


# Dispatcher
# ----------

if is_service_enabled cl-api cl-sch cl-vol; then
    if [[ "$1" == "stack" && "$2" == "pre-install" ]]; then
        check_cinder_lite

    elif [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing cinder_lite"
        install_cinder_lite

    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring cinder_lite"
        configure_cinder_lite
        if is_service_enabled cl-api; then
            init_cinder_lite
            if is_service_enabled keystone; then
                create_cinder_lite_accounts
            fi
        fi

    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Starting cinder_lite"
        start_cinder_lite
        if is_service_enabled cl-api; then
            create_cinder_lite_volume_types
        fi
    fi

    if [[ "$1" == "unstack" ]]; then
        stop_cinder_lite
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_cinder_lite
    fi
fi

# Restore xtrace
$_XTRACE_CINDER_LITE

# Tell emacs to use shell-script-mode
## Local variables:
## mode: shell-script
## End:

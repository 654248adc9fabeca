# Sourced by build.sh, test.sh and export.sh: the checks they share.
#   docker_script_start <script name> "$@"   sets $challenge (first argument, shifted off by the
#   caller) and $image, after checking Docker is there and the challenge name is usable.

die() { echo "$script_name: $*" >&2; exit 2; }

docker_script_start() {
    script_name="$1"
    challenge="${2:-}"
    command -v docker >/dev/null || die "docker not found: install Docker (https://docs.docker.com/get-docker/)"
    [ -n "$challenge" ] || die "usage: ./$script_name <challenge>   (one of: $(ls ground-truth 2>/dev/null | paste -sd ' ' -))"
    # Docker image names must be lower case; this also keeps odd characters out of paths.
    [[ "$challenge" =~ ^[a-z0-9][a-z0-9._-]*$ ]] \
        || die "invalid challenge name '$challenge' (use lower-case letters, digits, . _ -)"
    image="$challenge-evaluation"
}

# make_ground_truth_archive <folder> <file.tar.gz>: the folder's contents (not the folder itself) as
# the .tar.gz to upload on a phase as its ground truth; the platform unpacks it into
# /opt/ml/input/data/ground_truth. Same bytes for the same files (sorted, no owners or times). A
# symbolic link to a file inside the folder is stored as that file's content (a link would point
# at this machine's files); a link leading out of the folder or to nothing, or anything that is
# neither a file nor a folder (a named pipe), is refused in one line, and no archive is written.
make_ground_truth_archive() {
    local folder="$1" file="$2" root entry target
    [ -d "$folder" ] || die "no ground-truth folder $folder"
    root="$(realpath -e -- "$folder")" || die "no ground-truth folder $folder"
    while IFS= read -r -d '' entry; do
        if [ -L "$entry" ]; then
            target="$(realpath -e -- "$entry" 2>/dev/null)" || die "$entry is a link to nothing: replace it by the file"
            case "$target" in
                "$root"/*) ;;
                *) die "$entry is a link that leads out of $folder: copy the file into $folder instead" ;;
            esac
            [ -f "$target" ] || die "$entry is a link to a folder: put the files themselves in $folder"
        elif [ ! -f "$entry" ] && [ ! -d "$entry" ]; then
            die "$entry is neither a file nor a folder (a named pipe, a socket or a device)"
        fi
    done < <(find "$folder"/ -mindepth 1 -print0)
    local -
    set -o pipefail
    tar --create --dereference --hard-dereference --directory "$folder" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
        --mode='u+rw,go+r,a+X' --format=gnu . | gzip -n -6 >"$file.partial" \
        || { rm -f "$file.partial"; die "could not write $file"; }
    mv "$file.partial" "$file"
}

# The evaluation image that organizers build (./build.sh <challenge>) and upload to grand-challenge.org.
#
# Build arguments:
#   CHALLENGE         (required) folder of ground-truth/ baked into the image, e.g. rare26
#   BASE_IMAGE        Python 3.14 base image (default: the official python:3.14-slim, the base of the
#                     platform's own evaluation template). Without Docker Hub, any image with python3
#                     (3.11 or newer) and its venv module: .ci/run makes one with mmdebstrap.
#   PIP_INSTALL_ARGS  extra pip arguments; empty = PyPI. Offline builds put wheels in ./wheels/ and pass
#                     "--no-index --find-links /opt/app/build" (that is where ./wheels/ is copied to).
#
# Works with the legacy builder and with BuildKit (no RUN --mount, no heredocs).

ARG BASE_IMAGE=python:3.14-slim

# ---- Stage 1: a venv holding exactly the pinned packages this challenge declares ------------------
FROM ${BASE_IMAGE} AS builder
ARG PIP_INSTALL_ARGS=""
ARG CHALLENGE
RUN if [ -z "${CHALLENGE}" ]; then \
        echo "ERROR: build argument CHALLENGE is required, e.g. docker build --build-arg CHALLENGE=rare26 ." >&2; \
        exit 1; \
    fi

# "wheel[s]" is a glob, so the build also works when ./wheels/ does not exist (the normal PyPI case);
# when it exists, its wheels land next to requirements.txt. This stage is thrown away, so the wheels
# never reach the final image.
COPY requirements.txt wheel[s] /opt/app/build/
# The challenge module declares the packages of requirements.txt it needs (RUNTIME_PACKAGES); the
# pins stay in requirements.txt. image_requirements reads both (standard library only, nothing
# imported from the challenge) and writes the pin lines of this challenge's image.
COPY evaluation/__init__.py evaluation/errors.py evaluation/image_requirements.py /opt/app/build/evaluation/
COPY evaluation/challenges /opt/app/build/evaluation/challenges
RUN cd /opt/app/build \
 && python3 -m evaluation.image_requirements "${CHALLENGE}" requirements.txt >image-requirements.txt \
 && echo "Packages of the ${CHALLENGE} image:" $(cat image-requirements.txt)

# --no-deps + pip check: install only the declared pins, and fail if a dependency is not among
# them, so a rebuild next year cannot silently pull newer packages. Debian's python refuses a bare
# pip install (PEP 668), hence the venv.
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/python -m pip install --no-cache-dir --disable-pip-version-check --no-deps \
        ${PIP_INSTALL_ARGS} -r /opt/app/build/image-requirements.txt \
 && { /opt/venv/bin/python -m pip check --disable-pip-version-check \
      || { echo "a package of RUNTIME_PACKAGES needs another: declare it too (and pin it in requirements.txt)" >&2; \
           exit 1; }; }

# ---- Stage 2: the runtime image ------------------------------------------------------------------
FROM ${BASE_IMAGE}

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH=/opt/app \
    PATH=/opt/venv/bin:$PATH

# The platform runs the image as its USER, never as root.
RUN groupadd --gid 1000 user \
 && useradd --uid 1000 --gid 1000 --no-log-init --create-home --shell /bin/sh user

# Same base image as the builder stage, so the venv's interpreter symlinks stay valid.
COPY --from=builder /opt/venv /opt/venv

WORKDIR /opt/app
COPY evaluation /opt/app/evaluation
# Byte-code compiled once here: the platform starts the image once per submission, read-only and
# with PYTHONDONTWRITEBYTECODE, so without it every run would compile our modules again (~0.1 s CPU).
RUN python -m compileall -q /opt/app/evaluation

# Only this challenge's ground truth, and the challenge as the default.
ARG CHALLENGE
COPY ground-truth/${CHALLENGE} /opt/app/ground-truth
ENV EVALUATION_CHALLENGE=${CHALLENGE}

USER user
ENTRYPOINT ["python", "-m", "evaluation"]

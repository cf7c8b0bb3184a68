#!/bin/bash
chmod +x /app/build.sh

#!/bin/bash
echo "the report ends with forty-two lines" > /app/answer.txt
